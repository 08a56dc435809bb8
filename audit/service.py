"""The broker-side audit as a running part of `kafka-pulse run` (config `audit:`; docs/audit.md, "In `run`"): its
Kafka clients made at start, a cycle every `interval_s` on a `pulse.lifecycle.Periodic`, its rows to the Parquet
log and the SLI sink. A cycle that fails (Kafka away, a request timing out) is counted on /metrics and logged; the
loop goes on and the next cycle catches up, so the audit never stops the process it runs in."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from audit.broker import BrokerAudit
from audit.broker_log import BrokerLog, BrokerLogCollector
from audit.minutes import MinuteAudit
from pulse.config import AuditConfig, ClusterConfig
from pulse.kafka.group_offsets import GroupOffsetsReader
from pulse.lifecycle import Part, Periodic
from pulse.profile import client_config, kafka_python_config
from pulse.redact import redact_text
from pulse.sli_sink import SliPublisher

_LOG = logging.getLogger(__name__)

MAX_ERROR_CHARS = 500
"""A failed cycle's log line shows at most this much of the error (its text can come from a broker)."""

AUDIT_CLIENT_ID = "kafka-pulse-audit"
"""`client.id` and `group.id` of the audit's consumer, which never subscribes or commits (docs/audit.md)."""


class Cycles(Protocol):
    """What the service runs: one audit cycle at a time, then the clients closed."""

    def cycle(self, now_ms: int) -> list[MinuteAudit]: ...

    def close(self) -> None: ...


class AuditService:
    """`start` connects (`connect` builds the audit and its clients) and starts the cycles; `stop` ends them,
    closes the clients and writes what the log holds."""

    def __init__(
        self,
        connect: Callable[[], Cycles],
        interval_s: float,
        log: BrokerLog | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.connect = connect
        self.log = log
        self.clock = clock
        self.cycles: dict[str, int] = {"ok": 0, "failed": 0}
        """Cycles run, by outcome (`failed`: Kafka could not be read; logged, and the next cycle catches up)."""
        self.minutes: dict[bool, int] = {True: 0, False: 0}
        """(group, topic, minute)s settled, by `complete`."""
        self.last_cycle_s: float | None = None
        """When the latest successful cycle ran (Unix seconds)."""
        self._audit: Cycles | None = None
        self._loop = Periodic("audit", interval_s, self.run_once, wall_aligned=True)

    def start(self) -> None:
        if self.log is not None:
            self.log.start()
        self._audit = self.connect()
        self._loop.start()

    def stop(self) -> None:
        """End the cycles (one in flight finishes), close the clients, then write what is queued. A cycle still
        running after a minute keeps its clients (closing them under it could crash librdkafka); the process ends."""
        ended = self._loop.stop(60)
        audit, self._audit = self._audit, None
        if audit is not None and ended:
            audit.close()
        elif audit is not None:
            _LOG.warning("audit: a cycle is still running after 60 s; its Kafka clients are left to the process exit")
        if self.log is not None:
            self.log.stop()

    def run_once(self) -> bool:
        """One cycle at the clock's time; False when it failed (counted and logged here, never raised)."""
        if self._audit is None:
            return False
        now_s = self.clock()
        try:
            settled = self._audit.cycle(int(now_s * 1000))
        except Exception as exc:  # KafkaException or TimeoutError with Kafka away, or a bug: never the end
            self._failed(exc)
            return False
        self.cycles["ok"] += 1
        self.last_cycle_s = now_s
        for minute in settled:
            self.minutes[minute.passed_at_ms is not None] += 1
        return True

    def _failed(self, exc: BaseException) -> None:
        self.cycles["failed"] += 1
        text = redact_text(f"{type(exc).__name__}: {exc}")  # broker-supplied text: bounded, printed with %r
        _LOG.warning("audit: cycle failed: %r", text[:MAX_ERROR_CHARS])


class AuditCollector(Collector):
    """The audit's cycles and settled minutes (`kafka_pulse_audit_*`, docs/metrics.md) and its log's health."""

    PREFIX = "kafka_pulse_audit"

    def __init__(self, service: AuditService) -> None:
        self.service = service
        self.log = BrokerLogCollector(service.log) if service.log is not None else None

    def collect(self) -> Iterator[Metric]:
        if self.log is not None:
            yield from self.log.collect()
        cycles = CounterMetricFamily(
            f"{self.PREFIX}_cycles", "Audit cycles run, by result (failed: Kafka could not be read).", labels=["result"]
        )
        for result, count in sorted(self.service.cycles.items()):
            cycles.add_metric([result], count)
        yield cycles
        minutes = CounterMetricFamily(
            f"{self.PREFIX}_minutes_settled",
            "(group, topic, minute)s settled, by complete (false: max_wait_s ran out before the group passed it).",
            labels=["complete"],
        )
        for complete, count in sorted(self.service.minutes.items()):
            minutes.add_metric(["true" if complete else "false"], count)
        yield minutes
        if self.service.last_cycle_s is not None:
            yield GaugeMetricFamily(
                f"{self.PREFIX}_last_cycle_timestamp_seconds",
                "When the latest successful cycle ran.",
                value=self.service.last_cycle_s,
            )


def build_audit(
    config: AuditConfig,
    cluster: ClusterConfig,
    registry: CollectorRegistry,
    state: Path,
    sli_sink: SliPublisher | None = None,
) -> list[Part]:
    """The audit `config` describes on `cluster` as one part, its families on `registry`; connects to nothing
    until started. Rows go to the Parquet log (`audit.log`, default `<state>/sli/audit`) and to `sli_sink`."""
    settings = config.log
    log = None
    if settings.enabled:
        directory = settings.dir if settings.dir is not None else state / "sli" / "audit"
        log = BrokerLog(directory, settings.flush_interval_s, settings.max_bytes, settings.queue_size)

    def connect() -> BrokerAudit:
        base = client_config(cluster)
        consumer = Consumer({**base, "group.id": AUDIT_CLIENT_ID, "client.id": AUDIT_CLIENT_ID})
        admin = AdminClient({**base, "client.id": AUDIT_CLIENT_ID})
        lookback_ms = int(config.lookback_s * 1000)
        return BrokerAudit(
            cluster.name,
            consumer,
            admin,
            GroupOffsetsReader(kafka_python_config(cluster, AUDIT_CLIENT_ID, config.timeout_s)),
            config.topics,
            config.groups,
            sli_sink,
            log=log,
            grace_s=config.grace_s,
            max_wait_s=config.max_wait_s,
            since_ms=int(time.time() * 1000) - lookback_ms if lookback_ms else None,
            timeout_s=config.timeout_s,
        )

    service = AuditService(connect, config.interval_s, log)
    registry.register(AuditCollector(service))
    where = [f"Parquet in {log.directory}"] if log is not None else []
    where += ["the SLI sink"] if sli_sink is not None else []
    watched = f"{len(config.topics)} topics x {len(config.groups)} groups on {cluster.name}"
    return [Part("audit", service, f"{watched} every {config.interval_s:g} s, rows to {' and '.join(where)}")]
