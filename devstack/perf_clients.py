"""Kafka's own perf tools (`kafka-tools`) as real JVM clients with JMX on loopback: the producer and consumers the
client-side collectors scrape in tests and demos. Started as child processes, stopped by PID.

Client settings (bootstrap servers, client id, security) go in a properties file in the tool's own directory,
never on its command line. Option spellings follow the version: 4.2 renamed them (KIP-1147); verified on 3.9.2
and 4.3.1.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from devstack.runtime import KafkaRuntime
from pulse.ports import free_ports, is_listening
from pulse.process import ManagedProcess

PRODUCER_MAIN = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_MAIN = "org.apache.kafka.tools.ConsumerPerformance"
READY_TIMEOUT_S = 60.0
"""From exec to a listening JMX port; generous for a shared 2-core machine."""


def client_jvm_flags(jmx_port: int) -> list[str]:
    """A small heap, serial GC and C1 only (fast start, little CPU), and remote JMX on 127.0.0.1 with one port for
    registry and RMI, unauthenticated: a dev client, like the dev brokers' `topology.jvm_flags`."""
    return [
        "-Xms32m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        "-Dcom.sun.management.jmxremote=true",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
        f"-Dcom.sun.management.jmxremote.port={jmx_port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        "-Djava.rmi.server.hostname=127.0.0.1",
    ]


def _renamed_options(version: str) -> bool:
    """Whether the tools take KIP-1147's spellings (`--command-config`, `--num-records` for the consumer)."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (4, 2)


def producer_args(version: str, topic: str, records: int, throughput: int, record_size: int, config: Path) -> list[str]:
    """ProducerPerformance's options: `records` records of `record_size` bytes at about `throughput` records/s."""
    config_flag = "--command-config" if _renamed_options(version) else "--producer.config"
    return [
        *("--topic", topic),
        *("--num-records", str(records)),
        *("--record-size", str(record_size)),
        *("--throughput", str(throughput)),
        *(config_flag, str(config)),
    ]


def consumer_args(
    version: str, bootstrap_servers: str, topic: str, group: str, records: int, timeout_ms: int, config: Path
) -> list[str]:
    """ConsumerPerformance's options: consume up to `records` in `group`, giving up after `timeout_ms` without any."""
    renamed = _renamed_options(version)
    return [
        *("--bootstrap-server", bootstrap_servers),
        *("--topic", topic),
        *("--group", group),
        *("--num-records" if renamed else "--messages", str(records)),
        *("--timeout", str(timeout_ms)),
        *("--command-config" if renamed else "--consumer.config", str(config)),
    ]


def render_properties(settings: Mapping[str, str]) -> str:
    """A Java properties file; `\\`, `=`, `:`, leading blanks (and blanks in keys) escaped, so that
    `Properties.load` reads back exactly these keys and values."""

    def escape(text: str, is_key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:").replace("\n", "\\n")
        if is_key:
            return out.replace(" ", "\\ ")  # a blank would end the key
        return "\\" + out if out.startswith(" ") else out  # a leading blank would be dropped

    return "".join(f"{escape(key, True)}={escape(value, False)}\n" for key, value in settings.items())


@dataclass
class PerfClient:
    """One running perf tool: its client id, JMX port and process."""

    name: str
    client_id: str
    jmx_port: int
    process: ManagedProcess

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    def running(self) -> bool:
        return self.process.running()

    def kill(self) -> None:
        """SIGKILL, as a crashed client: its JMX endpoint vanishes with no goodbye."""
        os.kill(self.pid, signal.SIGKILL)
        self.process.stop(grace_s=5)  # reaps it

    def stop(self) -> None:
        """By PID: SIGTERM, a grace period, then SIGKILL; safe to call twice."""
        self.process.stop(grace_s=10)


def _launch(
    name: str, runtime: KafkaRuntime, main: str, args: list[str], workdir: Path, client_id: str, jmx_port: int | None
) -> PerfClient:
    port = jmx_port if jmx_port is not None else free_ports(1)[0]
    argv = ["java", *client_jvm_flags(port), "-cp", runtime.classpath, main, *args]
    process = ManagedProcess(name, argv, workdir / f"{name}.log", cwd=workdir).start()
    client = PerfClient(name, client_id, port, process)
    try:
        process.wait_ready(lambda: is_listening(port), READY_TIMEOUT_S, f"listening for JMX on 127.0.0.1:{port}")
    except BaseException:
        client.stop()
        raise
    return client


def _write_config(workdir: Path, name: str, settings: Mapping[str, str]) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}.properties"
    path.write_text(render_properties(settings))
    path.chmod(0o600)  # may hold SASL or key-store passwords
    return path


def start_producer(
    runtime: KafkaRuntime,
    workdir: Path,
    bootstrap_servers: str,
    topic: str,
    client_id: str,
    throughput: int = 200,
    duration_s: float = 300.0,
    record_size: int = 100,
    settings: Mapping[str, str] | None = None,
    jmx_port: int | None = None,
    records: int | None = None,
) -> PerfClient:
    """ProducerPerformance at about `throughput` records/s for about `duration_s`, then it exits by itself.
    `settings` are extra producer properties (security, acks, ...); returns once its JMX port listens. `records`
    replaces throughput x duration (needed with `throughput=-1`, as fast as it can)."""
    name = f"producer-perf-{client_id}"
    config = _write_config(
        workdir, name, {"bootstrap.servers": bootstrap_servers, "client.id": client_id, **(settings or {})}
    )
    records = records if records is not None else max(1, int(throughput * duration_s))
    args = producer_args(runtime.version, topic, records, throughput, record_size, config)
    return _launch(name, runtime, PRODUCER_MAIN, args, workdir, client_id, jmx_port)


def start_consumer(
    runtime: KafkaRuntime,
    workdir: Path,
    bootstrap_servers: str,
    topic: str,
    client_id: str,
    group: str,
    idle_timeout_s: float = 600.0,
    records: int = 10**12,
    settings: Mapping[str, str] | None = None,
    jmx_port: int | None = None,
) -> PerfClient:
    """ConsumerPerformance in consumer group `group`; it keeps consuming until `records` are read or nothing came
    for `idle_timeout_s`. Returns once its JMX port listens."""
    name = f"consumer-perf-{client_id}"
    config = _write_config(
        workdir, name, {"bootstrap.servers": bootstrap_servers, "client.id": client_id, **(settings or {})}
    )
    args = consumer_args(runtime.version, bootstrap_servers, topic, group, records, int(idle_timeout_s * 1000), config)
    return _launch(name, runtime, CONSUMER_MAIN, args, workdir, client_id, jmx_port)
