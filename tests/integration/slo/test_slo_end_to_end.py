"""End to end: the real canary's SLI log on a 3-node cluster with brokers killed makes the
burn-rate job page through a real Alertmanager running examples/alertmanager.yml, which sends a PagerDuty Events v2
`trigger` to the local receiver; after recovery a `resolve` with the same `dedup_key` follows. Alertmanager is
stopped by PID (SIGKILL) for 2 minutes from the moment of the kill, so the page is raised while it is
down: the page waits in the sink's spool and reaches PagerDuty after the restart; nothing is dropped.

Scaling. The job evaluates whole minutes and a minute is its shortest window, so the SRE Workbook policy is scaled
down 5x in time: a 6-day SLO window (30d / 5) and the page pair 12m/1m (1h/5m / 5) with the Workbook's share of
the budget, 2 %; the factor is recomputed as 2 % x 6d / 12m = 14.4, the Workbook's own, so the page fires when both
windows lose more than 14.4 x 0.1 % = 1.44 % of their probes. Scaling every window by one factor keeps the burn
rates and the share of budget spent at detection; only the time to detect shrinks. The second page pair (72m/6m at
6x) is left out: its 6-minute short window would hold the page 6 minutes past the recovery and only lengthen the
test. Tickets are disabled here; test_alert_delivery.py shows them.

Why two brokers. With one broker killed the cluster does its job: the controller fences it after its 9 s session
timeout, its leaderships move and acks=all probes succeed on the two replicas left (min.insync.replicas = 2): a blip
the 1-minute short window forgets at the next cycle, too short to hold a page across 2 minutes of Alertmanager
outage. Killing a second broker takes every partition below min.insync.replicas (and the KRaft quorum with it):
every probe fails until broker 2 is back, the sustained outage a page is for.

Timeline. The job runs once a minute, its default schedule (`slo.schedule_s`); the run "at m" (a whole minute) has
the minute before m as its short window, and starts at m + `LAG_S`. The lag is what the SLI log needs: a probe's row
carries its send time but is written when the probe settles, and a probe in flight to a dead or stalled broker
settles when the client gives it up (`canary.delivery_timeout_s`, 15 s here: still above the 9 s broker fence it
must outlast; at the default 30 s it was measured settling up to 33 s with the idempotent producer), not at the 5 s
latency SLO. First a baseline: the job runs minute after minute until a run at m0 is quiet on real, good events (on
a loaded host a minute can really hold slow probes and page; that is the job being right, so the test waits for a
quiet one rather than assuming it). The brokers are killed as soon as that run returns, at least `MIN_FAULT_S`
before m0 + 1, so the short window of the run at m0 + 1 ends with the fault: it fires on those failures, and the
alert goes to the spool. The brokers are restarted during the outage, as an operator would not wait for the alerting
stack to fix Kafka, `RESTART_INTO_S` into the minute before m0+2: that minute is down for at least that long plus the
restart and the election, so the run at m0+2, once Alertmanager is back, still pages and delivers the spooled
incident, and the minute after it can already be healthy. The runs after it show the recovery and the resolve.
Waiting for those minutes and for the outage's 2 minutes is the schedule under test, not a wait for a condition.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from canary.service import CanaryService
from canary.sli_log import configure_sli_log
from devstack.alertmanager import Alertmanager
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config, load_or_default
from pulse.alerts import AlertSink, SendResult, utc_now
from pulse.config import PulseConfig
from pulse.paths import cache_dir
from pulse.ports import wait_until
from slo import job, output
from slo.alerting import SloAlertDelivery
from slo.evaluation import floor_minute
from slo.model import Slo
from slo.results import SloResult, alert_states
from slo.spec import load_slos
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, _start
from tests.fixtures.services import PAGERDUTY_TEST_KEY, pagerduty_event
from tests.integration.canary.canary_support import FAST, await_healthy
from tests.support.receiver import PAGERDUTY_PATH, HttpReceiver

pytestmark = pytest.mark.integration

SLO = "produce-availability"
MINUTE = timedelta(minutes=1)
DELIVERY_TIMEOUT_S = 15.0
"""`canary.delivery_timeout_s`: a probe to a dead broker settles (fails) this long after it was sent, ~3 s more."""
LAG_S = 30.0
"""Minute m is evaluated at m + LAG_S, once its probes have settled (<= ~18 s) and been flushed (2 s); the rest of
the minute is the evaluation's, which must return before m + 1 - MIN_FAULT_S (at load 50-60 it took over 10 s)."""
OUTAGE_S = 120.0
"""Alertmanager down for 2 minutes (longer only if an evaluation inside it overruns)."""
RESTART_INTO_S = 10.0
"""The brokers are restarted this long into the minute after the fault's first: that minute holds at least this
much of the outage (1.44 % of it pages) before the restart and the election even begin."""
RECOVERY_CYCLES = 6
"""Cycles after the trigger within which the page must resolve (it takes 1-3)."""
BASELINE_CYCLES = 6
"""Runs within which one must be quiet and return in time to leave the fault `MIN_FAULT_S` of its minute."""
MIN_FAULT_S = 5.0
"""At 6 probes a second, 5 s of failures are 8 % of the minute, far above the page's 1.44 %."""


@pytest.fixture(scope="module")
def broken_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 3-node cluster of this module's own: killing two brokers must not hurt the session cluster."""
    yield from _start(tmp_path_factory.mktemp("kafka-slo-e2e"), 3, KAFKA_VERSION, Security.PLAINTEXT, "kafka-slo-e2e")


def write_config(root: Path, alertmanager_url: str) -> Path:
    """One kafka-pulse config for the whole path: the canary and its SLI log, the SLO over that log, alerting."""
    canary = {**FAST, "topic": f"canary-e2e-{uuid.uuid4().hex[:8]}", "latency_slo_s": 5.0, "loss_deadline_s": 10.0}
    canary["delivery_timeout_s"] = DELIVERY_TIMEOUT_S
    canary["sli_log"] = {"dir": str(root / "sli"), "flush_interval_s": 2.0}
    slo = {
        "name": SLO,
        "description": "Probes acknowledged by the in-sync replicas within 5 s",
        "source": {"type": "events", "path": "sli"},
        "good": "produce_ok",
        "total": "NOT duplicate",
        "objective": 99.9,
        "window": "6d",
        "group_by": ["cluster"],
        "alerting": {
            "page": {"windows": [{"long": "12m", "short": "1m", "budget_percent": 2}]},
            "ticket": {"disabled": True},
        },
    }
    config = {
        "canary": canary,
        "slo": {"results_dir": str(root / "results")},
        "alerting": {
            "enabled": True,
            "alertmanager_url": alertmanager_url,
            "spool_dir": str(root / "spool"),
            "timeout_s": 2.0,
            "retry_after_s": 5.0,  # below any cycle's length: every run after the outage tries Alertmanager
        },
        "slos": [slo],
    }
    path = root / "pulse.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@contextmanager
def canary_writing_sli_log(kafka: KafkaHandle, config: PulseConfig, state: Path) -> Iterator[CanaryService]:
    """The real canary probing `kafka`, every settled probe written to the Parquet SLI log of `config`."""
    registry = CollectorRegistry()
    sli_log = configure_sli_log(config.canary.sli_log, registry, state)
    assert sli_log is not None
    sli_log.start()
    service = CanaryService(dev_cluster_config(kafka.cluster), config.canary, [sli_log], registry)
    service.start()
    try:
        yield service
    finally:
        service.stop()
        sli_log.stop()


@dataclass
class Cycle:
    """One run of the scheduled job: evaluate minute `at`, write the results, deliver the alert states."""

    at: datetime
    page_firing: bool
    result: SloResult
    sent: SendResult


class ScheduledJob:
    """What `kafka-pulse slo` does every `slo.schedule_s`, composed from its parts: the Spark job, the Parquet
    results, and `SloAlertDelivery` into the `AlertSink`."""

    def __init__(self, spark: SparkSession, slos: list[Slo], config: PulseConfig, sink: AlertSink) -> None:
        self.spark = spark
        self.slos = slos
        self.config = config
        self.delivery = SloAlertDelivery.from_config(config.alerting, sink, config.slo.schedule_s)
        self.descriptions = {s.name: s.description for s in slos}
        self.cycles: list[Cycle] = []

    def next_minute(self) -> datetime:
        return self.cycles[-1].at + MINUTE

    def run(self, at: datetime) -> Cycle:
        """Evaluate minute `at` once the clock has passed it by LAG_S (the schedule), and deliver."""
        time.sleep(max(0.0, (at + timedelta(seconds=LAG_S) - utc_now()).total_seconds()))
        results = job.evaluate(self.spark, self.slos, at)
        assert self.config.slo.results_dir is not None
        output.write_results(results, self.config.slo.results_dir)
        sent = self.delivery.deliver(alert_states(results, self.descriptions), utc_now())
        (result,) = [r for r in results if r.name == SLO]
        assert result.labels == {"cluster": "dev"}, result.labels  # group_by: one instance, the canary's cluster
        (page,) = [a for a in result.alerts if a.severity == "page"]
        cycle = Cycle(at, page.firing, result, sent)
        self.cycles.append(cycle)
        return cycle


def restart_brokers(kafka: KafkaHandle, nodes: tuple[int, ...]) -> None:
    for node in nodes:
        kafka.cluster.restart(node, cache_dir(), timeout_s=180)


def pair_state(cycle: Cycle) -> str:
    (page,) = [a for a in cycle.result.alerts if a.severity == "page"]
    (pair,) = page.pairs
    return pair.state


def pages(receiver: HttpReceiver, after: int) -> list[Any]:
    """PagerDuty events about this test's SLO received from request index `after` on."""
    bodies = [r.json for r in receiver.requests[after:] if r.path == PAGERDUTY_PATH and isinstance(r.json, dict)]
    return [b for b in bodies if b.get("payload", {}).get("custom_details", {}).get("slo") == SLO]


def dedup_key(event: dict[str, Any]) -> str:
    key = event["dedup_key"]
    assert isinstance(key, str) and len(key) == 64, key
    return key


@pytest.mark.timeout(1500)  # fixtures (a 3-node cluster, Spark) plus ~6 one-minute cycles on a loaded machine
def test_a_broker_outage_pages_through_alertmanager_down_for_two_minutes_and_resolves(
    broken_kafka: KafkaHandle,
    spark: SparkSession,
    example_alertmanager: Alertmanager,
    http_receiver: HttpReceiver,
    tmp_path: Path,
) -> None:
    cluster = broken_kafka.cluster
    config_path = write_config(tmp_path, example_alertmanager.url)
    config = load_or_default(config_path, {})
    assert config.canary.sli_log.dir is not None
    sli_dir = config.canary.sli_log.dir

    with (
        canary_writing_sli_log(broken_kafka, config, tmp_path / "state") as canary,
        AlertSink.from_config(config.alerting, tmp_path / "state") as sink,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        await_healthy(canary, {1, 2, 3})
        healthy_at = utc_now()
        # The spec is checked against the log's Parquet schema, so it is loaded once the first file is there.
        assert wait_until(lambda: next(sli_dir.rglob("*.parquet"), None) is not None, 60), "no SLI log file"
        slos = load_slos(config, str(config_path), config_path.parent)
        scheduled = ScheduledJob(spark, slos, config, sink)
        job.evaluate(spark, slos, floor_minute(utc_now()))  # Spark's first job is slow (JIT): do it while waiting
        # The baseline: a run quiet on real events that returns early enough in the next minute to leave the fault
        # MIN_FAULT_S of it. m's short window [m - 1m, m) holds at least 30 s of probes of a healthy cluster.
        m = floor_minute(healthy_at + timedelta(seconds=30)) + MINUTE
        for _ in range(BASELINE_CYCLES):
            before = scheduled.run(m)
            in_time = utc_now() <= m + MINUTE - timedelta(seconds=MIN_FAULT_S)
            if in_time and not before.page_firing and pair_state(before) == "ok":
                break
            m += MINUTE
        else:
            pytest.fail(
                f"no quiet baseline minute in {BASELINE_CYCLES}: {[(c.at, c.page_firing) for c in scheduled.cycles]}"
            )
        m0, first = before.at, len(scheduled.cycles) - 1
        assert before.sent.spooled == 0, before.sent  # Alertmanager is up: a baseline's resolve (if any) is delivered

        mark = http_receiver.mark()
        with example_alertmanager.outage(signal.SIGKILL):
            outage_end = time.monotonic() + OUTAGE_S
            killed_at = utc_now()
            cluster.kill(3)
            cluster.kill(2)  # below min.insync.replicas: every acks=all probe now fails
            time.sleep(max(0.0, (m0 + MINUTE + timedelta(seconds=RESTART_INTO_S) - utc_now()).total_seconds()))
            # Broker 2 back restores the quorum and two in-sync replicas; broker 3 follows. The job keeps its
            # schedule meanwhile, as it would in production.
            restarted = pool.submit(restart_brokers, broken_kafka, (2, 3))
            raised = scheduled.run(m0 + MINUTE)
            assert raised.page_firing, (killed_at, raised.at, pair_state(raised), raised.result.burn_rates)
            assert raised.sent == SendResult(delivered=0, spooled=1), raised.sent
            (waiting,) = sink.pending()
            assert waiting.labels["slo"] == SLO and waiting.labels["severity"] == "page"
            assert not waiting.is_resolved(utc_now())
            time.sleep(max(0.0, outage_end - time.monotonic()))  # the rest of the 2 minutes
        back = utc_now()
        assert pages(http_receiver, mark) == [], "a page left while Alertmanager was down"

        after = scheduled.run(m0 + 2 * MINUTE)
        assert after.page_firing, (after.at, pair_state(after), after.result.burn_rates)
        assert after.sent == SendResult(delivered=1, spooled=0), after.sent  # the spooled state, superseded
        trigger = pagerduty_event(http_receiver, "trigger", SLO, after=mark, timeout_s=60)
        assert trigger["routing_key"] == PAGERDUTY_TEST_KEY
        assert trigger["payload"]["severity"] == "critical"
        assert trigger["payload"]["custom_details"]["cluster"] == "dev"
        assert trigger["payload"]["summary"].startswith(f"SLO {SLO} burns its error budget ")
        # What Alertmanager holds is the incident raised during the outage (its startsAt kept), not a new one.
        (held,) = [a for a in example_alertmanager.alerts() if a["labels"].get("slo") == SLO]
        assert datetime.fromisoformat(held["startsAt"]) < back, (held["startsAt"], back)

        mark_recovery = http_receiver.mark()
        for _ in range(RECOVERY_CYCLES):
            if restarted.done():
                restarted.result()  # a broker that failed to restart fails the test now, not 6 cycles later
            if not scheduled.run(scheduled.next_minute()).page_firing:
                break
        restarted.result(timeout=400)
        last = scheduled.cycles[-1]
        assert not last.page_firing, [(c.at, c.page_firing, c.result.burn_rates) for c in scheduled.cycles]
        assert pair_state(last) == "ok"  # resolved on real good events, not for want of data
        resolve = pagerduty_event(http_receiver, "resolve", SLO, after=mark_recovery, timeout_s=60)
        assert dedup_key(resolve) == dedup_key(trigger)

        assert sink.pending() == []
        assert not any(sink.stats.dropped.values()), sink.stats.dropped
        assert sink.stats.failed >= 1 and sink.stats.spooled >= 1

    # The job's Parquet results tell the same story, one row a cycle: quiet, paging, quiet.
    table = pq.read_table(config.slo.results_dir).sort_by("at")
    assert table.column("at").to_pylist() == [c.at for c in scheduled.cycles]
    firing = table.column("page_firing").to_pylist()
    assert firing == [c.page_firing for c in scheduled.cycles]
    assert firing[first : first + 3] == [False, True, True] and firing[-1] is False
    assert scheduled.cycles[first].at == m0
