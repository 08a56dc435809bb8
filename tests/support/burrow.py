"""Debian's Burrow 1.2.1 on loopback, the reference our lag evaluator is compared against side by side; it reads
one Kafka 3.x cluster (4.x brokers reject its ListOffsets v0) and needs a ZooKeeper of its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from devstack.services import LocalService, QueryFailed, decode_json, http_ok
from pulse.errors import ConfigError, ProcessFailed
from pulse.process import require_program, tail

PACKAGE = "burrow"
READY_LINE = '"msg":"starting consumers"'
"""Logged by the consumer module, the last to start, once it found __consumer_offsets (kafka_client.go)."""


@dataclass(frozen=True)
class BurrowOptions:
    """The knobs that must match our evaluator's for a fair side-by-side run.
    Names follow burrow.toml's keys; times are seconds."""

    kafka_version: str = "2.1.0"
    """The highest value 1.2.1 accepts; anything newer panics with 'Unknown Kafka Version'."""
    client_id: str = "burrow-pulse"
    topic_refresh_s: int = 30
    offset_refresh_s: int = 10
    """How often broker HWMs are fetched; equals our HWM poll interval."""
    intervals: int = 10
    """Commits kept per partition: the evaluation window length."""
    min_distance_s: int = 1
    expire_group_s: int = 604800
    storage_workers: int = 20
    expire_cache_s: int = 1
    """The evaluator cache; the 10 s default would hide status transitions."""
    minimum_complete: float = 0.0
    start_latest: bool = False
    """False replays __consumer_offsets from the start, so groups committed before Burrow started are seen."""
    group_blacklist: str = "^console-consumer-"
    """1.2.1's key name (1.3.5+ calls it group-denylist)."""
    zookeeper_timeout_s: int = 6
    zookeeper_root_path: str = "/burrow"
    log_level: str = "info"


def toml_string(value: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters (U+007F included) escaped."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_string(key)


def _toml_value(value: str | int | float | bool | Sequence[str]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    return "[" + ", ".join(toml_string(v) for v in value) + "]"


Table = Mapping[str, str | int | float | bool | Sequence[str]]


def _hostports(values: Sequence[str], where: str) -> list[str]:
    if not values:
        raise ConfigError(f"{where}: at least one host:port is needed")
    for i, value in enumerate(values):
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"{where}[{i}]: {value!r} is not host:port")
    return list(values)


def render_burrow_toml(
    zookeeper: Sequence[str],
    bootstrap_servers: Sequence[str],
    cluster: str,
    http_address: str,
    pidfile: Path,
    options: BurrowOptions | None = None,
) -> str:
    """burrow.toml for one Kafka cluster, in 1.2.1's key names: logs go to stdout (no filename), the pidfile and
    HTTP listener are the caller's; pure, so a unit test parses it back with tomllib."""
    o = options or BurrowOptions()
    if not cluster:
        raise ConfigError("burrow: cluster name must not be empty")
    servers = _hostports(bootstrap_servers, "burrow: bootstrap_servers")
    profile = "pulse"
    sections: list[tuple[str, Table]] = [
        ("general", {"pidfile": str(pidfile)}),
        ("logging", {"level": o.log_level}),
        (
            "zookeeper",
            {
                "servers": _hostports(zookeeper, "burrow: zookeeper"),
                "timeout": o.zookeeper_timeout_s,
                "root-path": o.zookeeper_root_path,
            },
        ),
        (f"client-profile.{profile}", {"client-id": o.client_id, "kafka-version": o.kafka_version}),
        (
            f"cluster.{_toml_key(cluster)}",
            {
                "class-name": "kafka",
                "servers": servers,
                "client-profile": profile,
                "topic-refresh": o.topic_refresh_s,
                "offset-refresh": o.offset_refresh_s,
            },
        ),
        (
            f"consumer.{_toml_key(cluster)}",
            {
                "class-name": "kafka",
                "cluster": cluster,
                "servers": servers,
                "client-profile": profile,
                "start-latest": o.start_latest,
                "group-blacklist": o.group_blacklist,
            },
        ),
        (
            "storage.default",
            {
                "class-name": "inmemory",
                "intervals": o.intervals,
                "min-distance": o.min_distance_s,
                "expire-group": o.expire_group_s,
                "workers": o.storage_workers,
            },
        ),
        (
            "evaluator.default",
            {"class-name": "caching", "expire-cache": o.expire_cache_s, "minimum-complete": o.minimum_complete},
        ),
        ("httpserver.default", {"address": http_address}),
    ]
    blocks = []
    for header, table in sections:
        lines = [f"[{header}]", *(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items())]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


class Burrow(LocalService):
    """Burrow 1.2.1 for one Kafka cluster. Ready means the HTTP API answers and the consumer module found
    __consumer_offsets: Burrow's HTTP server starts before its Kafka modules, so `/burrow/admin` alone would
    pass for a moment even when Kafka is absent and Burrow is about to exit."""

    name = "burrow"
    ready_timeout_s = 60.0

    def __init__(
        self,
        workdir: Path,
        zookeeper: Sequence[str],
        bootstrap_servers: Sequence[str],
        cluster: str = "local",
        options: BurrowOptions | None = None,
        port: int | None = None,
    ) -> None:
        super().__init__(workdir, port)
        self.zookeeper = tuple(zookeeper)
        self.bootstrap_servers = tuple(bootstrap_servers)
        self.cluster = cluster
        self.options = options or BurrowOptions(zookeeper_root_path=f"/burrow-{self.port}")

    def prepare(self) -> None:
        text = render_burrow_toml(
            self.zookeeper,
            self.bootstrap_servers,
            self.cluster,
            self.address,
            self.workdir / "burrow.pid",
            self.options,
        )
        (self.workdir / "burrow.toml").write_text(text)

    def argv(self) -> list[str]:
        return [require_program("Burrow", PACKAGE), "-config-dir", str(self.workdir)]

    def env(self) -> Mapping[str, str]:
        # Burrow lets BURROW_* variables override any config key; ours must be the only source.
        return {k: v for k, v in os.environ.items() if not k.startswith("BURROW_")}

    def is_ready(self) -> bool:
        try:
            started = READY_LINE in self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return started and http_ok(self.http, "/burrow/admin")

    def start(self) -> Burrow:
        """Start, translating an early exit into a message that leads with Burrow's own error lines."""
        try:
            return super().start()
        except ProcessFailed as exc:
            errors = [line for line in tail(self.log_path, 200).splitlines() if '"level":"error"' in line]
            errors += [line for line in tail(self.log_path, 200).splitlines() if "panic" in line.lower()]
            reason = "\n".join(errors[-5:]) or "(no error line logged)"
            raise ProcessFailed(
                f"Burrow for cluster {self.cluster!r} (Kafka {list(self.bootstrap_servers)}, ZooKeeper "
                f"{list(self.zookeeper)}) did not start; Burrow 1.2.1 needs a reachable Kafka 3.x broker with "
                f"__consumer_offsets already created. Its errors:\n{reason}\n\n{exc}"
            ) from exc

    # --- HTTP API v3 -----------------------------------------------------------------------------------------
    def get(self, path: str) -> dict[str, Any]:
        """GET a Burrow v3 path; Burrow's 404 bodies are JSON with `"error": true`, returned as they are so
        callers can poll for a group that has not been seen yet."""
        response = self.call("GET", path)
        body = decode_json(response, f"burrow {path}")
        if response.status_code not in (200, 404) or not isinstance(body, dict):
            raise QueryFailed(f"burrow {path}: HTTP {response.status_code}: {body!r}"[:2000])
        return cast(dict[str, Any], body)

    def consumers(self, cluster: str | None = None) -> list[str]:
        """The consumer groups Burrow knows in `cluster` (default: the one it was started for)."""
        body = self.get(f"/v3/kafka/{quote(cluster or self.cluster)}/consumer")
        return cast(list[str], body.get("consumers") or [])

    def group_lag(self, cluster: str | None, group: str) -> dict[str, Any]:
        """The whole `/v3/kafka/{cluster}/consumer/{group}/lag` answer (status with every partition)."""
        return self.get(f"/v3/kafka/{quote(cluster or self.cluster)}/consumer/{quote(group, safe='')}/lag")

    def group_status(self, cluster: str | None, group: str) -> dict[str, Any]:
        """`/v3/kafka/{cluster}/consumer/{group}/status`: only the partitions that are not OK."""
        return self.get(f"/v3/kafka/{quote(cluster or self.cluster)}/consumer/{quote(group, safe='')}/status")
