"""Every panel query of every generated dashboard, parsed by Prometheus and run against a real Prometheus that
scrapes a real `kafka-pulse run` on the local cluster under load, returns data.

The set-up gives each dashboard something to show: `kafka-pulse run` (collectors, canary, lag) on one /metrics, its
canary mirroring through a real MirrorMaker 2 to a 1-node target cluster (remote storage on, with a tiered topic
copied and a group committed below its local data, for the tiered-storage dashboard); a producer and three consumer
groups (one
keeping up, one slow, one stalled, so some lag and some reasons); the burn-rate job's gauges from `slo evaluate
--pushgateway` on a synthetic event log; and the rules of `kafka-pulse slo rules` for an SLO the cluster cannot meet
(round trips under 0.5 ms), so its alert fires.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from pyspark.sql import SparkSession

from dashboards.files import all_dashboards
from dashboards.lint import all_panels
from devstack.prometheus import Prometheus, ScrapeTarget
from devstack.pushgateway import Pushgateway
from devstack.services import QueryFailed, decode_json
from devstack.tiered_storage import TIERED_STORAGE_VERSION
from devstack.topology import Security
from kafka_pulse.cli.main import cli
from kafka_pulse.clusters import dev_cluster_config
from pulse.names import SLO_PUSH_JOB
from pulse.paths import cache_dir
from pulse.ports import free_ports, wait_until
from slo.rules import GROUP_INTERVAL, RuleOptions
from slo.rules_files import load_rule_slos, output_files, select
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, commit_offsets
from tests.fixtures.kafka import _start as start_cluster
from tests.fixtures.logs import register_log
from tests.fixtures.pulse_process import PulseProcesses
from tests.fixtures.spark import minutes, write_rows
from tests.support.mirrormaker import MirrorMaker, MirrorSpec

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
CLUSTER = "dash"
MIRROR_TARGET = "dash-mirror"
CANARY_RACK = "az-a"
MACROS = {"__rate_interval": "15s", "__interval": "5s", "__range": "10m"}
"""What Grafana would put in for the macros the dashboards use (dashboards.lint.GRAFANA_MACROS), at a 1 s scrape."""
PREFERRED = {"cluster": CLUSTER, "client_rack": CANARY_RACK}
"""Single-value variables take these values when Prometheus offers them (the session may hold other clusters)."""
DATA_TIMEOUT_S = 300.0
"""MirrorMaker's first copies, lag windows and the rule group's first evaluation all come within it."""
RULES_INTERVAL = "5s"
"""The generated group's `interval` here instead of its 1m: Prometheus first evaluates a group up to one interval after
loading it, and one evaluation records every series the panels read, so the test need not wait up to a minute."""


@dataclass(frozen=True)
class PanelQuery:
    dashboard: str
    panel_id: int
    panel: str
    ref_id: str
    expr: str

    def __str__(self) -> str:
        return f"{self.dashboard} / panel {self.panel_id} {self.panel!r} / {self.ref_id}: {self.expr}"


# --- kafka-pulse processes ---------------------------------------------------------------------------------------


def pulse_config(
    kafka: KafkaHandle, target: KafkaHandle, ports: dict[str, int], mirror_topic: str, mm2_jmx_port: int
) -> dict[str, Any]:
    cluster = dev_cluster_config(kafka.cluster, name=CLUSTER).model_dump(mode="json")
    cluster["jmx"]["timeout_s"] = 30  # a first JMX connect on a loaded 2-core machine can take seconds
    mirror_target = dev_cluster_config(target.cluster, name=MIRROR_TARGET).model_dump(mode="json")
    mirror_target["jmx"]["timeout_s"] = 30  # scraped for its remote-storage beans
    return {
        "clusters": [cluster, mirror_target],
        "collectors": {
            "transport": "jpype",
            "scrape_interval_s": 2,
            "topic_metrics": "partition",
            "topic_allow": "^dash",  # the test's topics, and MirrorMaker's copies: its series name the copy (dash.*)
            "clients": [{"name": "mm2", "port": mm2_jmx_port, "cluster": CLUSTER, "timeout_s": 30}],
        },
        "canary": {
            "cluster": CLUSTER,
            "topic": f"dash-canary-{uuid.uuid4().hex[:8]}",
            "client_rack": CANARY_RACK,
            "interval_s": 0.5,
            "latency_slo_s": 1.0,
            "loss_deadline_s": 5.0,
            "availability_window_s": 10.0,
            "connection_check_interval_s": 1.0,
            "metadata_refresh_s": 1.0,
            "reconcile_interval_s": 1.0,
            "sli_log": {"enabled": False},
            "mirror": {
                "enabled": True,
                "source": CLUSTER,
                "target": MIRROR_TARGET,
                "topic": mirror_topic,
                "source_alias": CLUSTER,
                "loss_deadline_s": 30,
            },
        },
        "lag": {
            "mode": "enhanced",
            "intervals": 3,
            "offset_refresh_s": 1,
            "group_allow": "^dash-",
            "exact_time_lag": {"enabled": True, "interval_s": 1},
            "page_cache": {"enabled": True, "size_bytes": 1 << 20, "record_bytes": 100},
        },
        "http": {"listen": f"127.0.0.1:{ports['run']}"},
    }


def tier_on(target: KafkaHandle) -> None:
    """A tiered topic on the mirror's target (1 MiB segments, 1 byte of local retention) with three closed
    segments, so they are copied and deleted locally, and a group committed at 0, so it reads the remote tier."""
    settings = {"remote.storage.enable": "true", "segment.bytes": str(1 << 20), "local.retention.bytes": "1"}
    topic = target.create_topic("dash-tiered", 1, 1, **settings)
    producer = target.producer(**{"linger.ms": 20})
    for i in range(4000):
        producer.produce(topic, b"x" * 1000, partition=0)
        if i % 500 == 499:
            producer.flush(30)
    assert producer.flush(30) == 0
    replay = target.consumer("dash-replay")
    commit_offsets(replay, [TopicPartition(topic, 0, 0)])
    replay.close()


# --- load: a producer and three consumer groups ------------------------------------------------------------------


class Load:
    """Produces to `topic` all along; `dash-live` consumes it (OK), `dash-slow` commits half of what was produced
    (lag grows: WARN), `dash-stalled` re-commits offset 1 (commits without progress: STALL, so ERR)."""

    def __init__(self, kafka: KafkaHandle, topic: str, partitions: int) -> None:
        self.kafka, self.topic, self.partitions = kafka, topic, partitions
        self.stopped = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._guard, args=(f,), daemon=True) for f in (self._produce, self._live)
        ]

    def _guard(self, body: Any) -> None:
        try:
            body()
        except BaseException as exc:  # reported by stop(), so the test fails instead of silently losing load
            self.errors.append(exc)

    def _produce(self) -> None:
        producer = self.kafka.producer()
        slow, stalled = self.kafka.consumer("dash-slow"), self.kafka.consumer("dash-stalled")
        produced = [0] * self.partitions
        try:
            while not self.stopped.wait(0.5):
                for i in range(30):
                    partition = i % self.partitions
                    producer.produce(self.topic, b"x" * 100, partition=partition)
                    produced[partition] += 1
                producer.flush(10)
                slow.commit(
                    offsets=[TopicPartition(self.topic, p, n // 2) for p, n in enumerate(produced)], asynchronous=False
                )
                stalled.commit(offsets=[TopicPartition(self.topic, p, 1) for p in range(self.partitions)],
                               asynchronous=False)  # fmt: skip
        finally:
            slow.close()
            stalled.close()

    def _live(self) -> None:
        consumer: Consumer = self.kafka.consumer("dash-live")
        consumer.subscribe([self.topic])
        try:
            while not self.stopped.is_set():
                if consumer.poll(0.2) is not None:
                    consumer.commit(asynchronous=True)
        finally:
            consumer.close()

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=30)
        assert not self.errors, self.errors


# --- SLO inputs: the job's gauges and the generated rules ----------------------------------------------------------


def push_slo_gauges(root: Path, pushgateway: Pushgateway) -> None:
    """`slo evaluate --pushgateway` at the current minute over ten days of 100 events a minute, 1 % bad in the
    last six hours: burn rate 10 over 6h and 30m pages (factor 6), the budget lasts about 20 more hours."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    count = 10 * 1440
    start = now - timedelta(minutes=count)
    good = np.full(count, 100)
    good[-360:] = 99
    times: list[datetime | None] = list(minutes(start, count))
    write_rows(root / "events" / "date=all", times, ok=good, n=np.full(count, 100))
    spec = {"name": "dash-produce", "labels": {"cluster": CLUSTER}, "source": {"type": "events", "path": "events"},
            "good": "ok", "total": "n", "objective": 99.9, "window": "30d"}  # fmt: skip
    config = root / "slo.yaml"
    config.write_text(yaml.safe_dump({"slos": [spec]}))
    at = now.isoformat().replace("+00:00", "Z")
    args = [
        "slo",
        "evaluate",
        "--config",
        str(config),
        "--at",
        at,
        "--json",
        "--pushgateway",
        str(pushgateway.http.base_url),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (slo,) = json.loads(result.output)["slos"]
    assert [a["firing"] for a in slo["alerts"] if a["severity"] == "page"] == [True], slo
    assert slo["exhaustion_at"] is not None, slo


def slo_rules(root: Path, prometheus_url: str) -> list[Path]:
    """Rules generated by slo/rules_files.py for an SLO no local cluster meets: 99.9 % of canary round trips
    within 0.5 ms. Its error ratio is about 1, so both page pairs fire at the group's first evaluation (at
    RULES_INTERVAL; the expressions are as generated)."""
    selector = f'cluster="{CLUSTER}", replica="leader"'
    spec = {
        "name": "dash-e2e-half-ms",
        "labels": {"cluster": CLUSTER},
        "source": {"type": "prometheus", "url": prometheus_url},
        "good": f'sum(increase(kafka_pulse_canary_e2e_latency_seconds_bucket{{{selector}, le="0.0005"}}[1m]))',
        "total": f"sum(increase(kafka_pulse_canary_e2e_latency_seconds_count{{{selector}}}[1m]))",
        "objective": 99.9,
    }
    root.mkdir(parents=True)
    config = root / "rules.yaml"
    config.write_text(yaml.safe_dump({"slos": [spec]}))
    from pulse.config import load_config

    loaded = load_config(config, os.environ)
    selection = select(load_rule_slos(loaded, str(config), root), str(config))
    files = output_files(selection.chosen, RuleOptions({}, None), str(config))
    paths = []
    for name, text in files.items():
        if name.endswith(".rules.yml"):
            rules = yaml.safe_load(text)
            assert [g["interval"] for g in rules["groups"]] == [GROUP_INTERVAL], rules["groups"]
            for group in rules["groups"]:
                group["interval"] = RULES_INTERVAL
            (root / name).write_text(yaml.safe_dump(rules, sort_keys=False))
            paths.append(root / name)
    return paths


# --- queries -------------------------------------------------------------------------------------------------------


def label_values(prometheus: Prometheus, definition: str) -> list[str]:
    """What Grafana's `label_values(selector, label)` lists, through Prometheus' label values API."""
    match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", definition)
    assert match, definition
    selector, label = match.groups()
    response = prometheus.call("GET", f"/api/v1/label/{label}/values", params={"match[]": selector})
    return sorted(decode_json(response, f"label values of {definition}")["data"])


def substitute(text: str, values: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name = next(g for g in match.groups() if g is not None)
        return values.get(name, match.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, text)


def resolve_variables(prometheus: Prometheus, dashboard: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Each variable's value as Grafana would send it: All (`.*`) for multi-value ones, else the preferred or first
    value its own query offers. Also names the variables whose query offers nothing."""
    values: dict[str, str] = dict(MACROS)
    empty: list[str] = []
    for var in dashboard["templating"]["list"]:
        name, kind = var["name"], var["type"]
        if kind == "custom":
            values[name] = var["current"]["value"]
        elif kind == "query":
            offered = label_values(prometheus, substitute(var["definition"], values))
            if not offered:
                empty.append(f"{dashboard['uid']}: variable {name}: {var['definition']}")
            if var.get("multi"):
                values[name] = var["allValue"]
            else:
                preferred = PREFERRED.get(name)
                values[name] = preferred if preferred in offered else (offered[0] if offered else "")
    return values, empty


def parse_error(prometheus: Prometheus, expr: str) -> str | None:
    """Prometheus' own parser: `/api/v1/format_query` (2.42 has no `/api/v1/parse_query`); None when it parses."""
    response = prometheus.call("GET", "/api/v1/format_query", params={"query": expr})
    body = decode_json(response, "format_query")
    return None if body.get("status") == "success" else str(body.get("error"))


def panel_queries(prometheus: Prometheus) -> tuple[list[PanelQuery], list[str]]:
    queries: list[PanelQuery] = []
    empty_variables: list[str] = []
    for dashboard in all_dashboards().values():
        values, empty = resolve_variables(prometheus, dashboard)
        empty_variables += empty
        for panel in all_panels(dashboard):
            for target in panel.get("targets", []):
                expr = substitute(target["expr"], values)
                queries.append(PanelQuery(dashboard["uid"], panel["id"], panel["title"], target["refId"], expr))
    return queries, empty_variables


class QueryChecks:
    """Polled until every query returned data once: each round re-resolves the variables (their values may only
    appear later), parses new queries once and runs those without data yet. Parse errors end the wait at once."""

    def __init__(self, prometheus: Prometheus) -> None:
        self.prometheus = prometheus
        self.why: dict[str, str] = {}
        """Query (as text) -> why it has no data yet; "" once it returned data."""
        self.unparsed: list[str] = []
        self.empty_variables: list[str] = []

    def done(self) -> bool:
        queries, self.empty_variables = panel_queries(self.prometheus)
        for query in queries:
            key = str(query)
            if key not in self.why:
                error = parse_error(self.prometheus, query.expr)
                if error is not None:
                    self.unparsed.append(f"{query}\n    {error}")
                    self.why[key] = "unparsed"
                    continue
                self.why[key] = "no data"
            if self.why[key] in ("", "unparsed"):
                continue
            try:
                self.why[key] = "" if self.prometheus.query(query.expr) else "no data"
            except QueryFailed as exc:
                self.why[key] = f"query failed: {exc}"
        return bool(self.unparsed) or (not self.empty_variables and not self.failing())

    def failing(self) -> list[str]:
        return [f"{key}\n    {why}" for key, why in self.why.items() if why not in ("", "unparsed")]


# --- the test ------------------------------------------------------------------------------------------------------


def test_every_panel_query_parses_and_returns_data(
    kafka: KafkaHandle,
    prometheus: Prometheus,
    pushgateway: Pushgateway,
    spark: SparkSession,
    pulse_process: PulseProcesses,
    tmp_path: Path,
) -> None:
    load_topic = kafka.create_topic("dash-load", partitions=3)
    mirror_topic = f"dash-mirror-{uuid.uuid4().hex[:8]}"
    admin = kafka.admin()  # kept referenced: a collected AdminClient cancels its futures
    admin.create_topics([NewTopic(mirror_topic, 3, 3)])[mirror_topic].result(timeout=30)
    ports = dict(zip(("run", "mm2"), free_ports(2), strict=True))
    targets = [ScrapeTarget("dash-run", (f"127.0.0.1:{ports['run']}",))]
    home = tmp_path / "home"
    home.mkdir()
    with contextlib.ExitStack() as stack:
        # The mirror's target is a cluster of its own: MirrorMaker 2 always copies heartbeats topics, and within one
        # cluster it would copy its own copies (dash.heartbeats, dash.dash.heartbeats, ...) without end.
        # It has remote storage on, with a tiered topic, for the tiered-storage dashboard (whose cluster variable
        # lists only clusters with a tiered topic).
        target = stack.enter_context(
            contextlib.contextmanager(start_cluster)(tmp_path / "target", 1, TIERED_STORAGE_VERSION, Security.PLAINTEXT,
                                                     "dash-target", tiered_storage=True)
        )  # fmt: skip
        tier_on(target)
        config = pulse_config(kafka, target, ports, mirror_topic, ports["mm2"])
        spec = MirrorSpec(
            kafka.bootstrap_servers, target.bootstrap_servers, topics=(mirror_topic,), source_brokers=3,
            target_brokers=1, source_alias=CLUSTER, target_alias=MIRROR_TARGET,
        )  # fmt: skip
        mirrormaker = MirrorMaker(tmp_path / "mm2", spec, KAFKA_VERSION, cache_dir(), jmx_port=ports["mm2"])
        register_log("mirrormaker2 (dashboards)", mirrormaker.log_path)
        stack.callback(pushgateway.delete, SLO_PUSH_JOB)
        stack.callback(mirrormaker.stop)
        mirrormaker.start(240)  # before the canary, whose mirror reader starts once the copy exists
        stack.enter_context(Load(kafka, load_topic, 3))
        run = stack.enter_context(pulse_process.start("run", config, home=home, timeout_s=90))
        stack.enter_context(prometheus.extended(targets=targets))
        push_slo_gauges(tmp_path / "slo", pushgateway)
        prometheus.wait_for_query(f'kafka_pulse_canary_e2e_latency_seconds_count{{cluster="{CLUSTER}"}}', 120)
        stack.enter_context(prometheus.extended(rule_files=slo_rules(tmp_path / "rules", prometheus.url)))
        checks = QueryChecks(prometheus)
        wait_until(checks.done, DATA_TIMEOUT_S, interval_s=3.0)
        assert run.alive(), "kafka-pulse run exited during the test; see its log"
    assert checks.unparsed == [], "queries Prometheus cannot parse:\n" + "\n".join(checks.unparsed)
    assert checks.empty_variables == [], "variables whose query found nothing:\n" + "\n".join(checks.empty_variables)
    failing = checks.failing()
    assert failing == [], f"{len(failing)} of {len(checks.why)} panel queries returned no data:\n" + "\n".join(failing)
    assert len(checks.why) == sum(len(p.get("targets", [])) for d in all_dashboards().values() for p in all_panels(d))
