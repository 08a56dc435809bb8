"""The audit's reconciliation in `run` (`audit.reconcile`; docs/audit.md, "Reconciliation"): the `audit-client` and
`audit-broker` rows read from the SLI sink's topics with the SLO stream's Kafka source (slo.kafka_rows), the
streaming query of audit.ReconcileStream on the process's Spark session, watched every trigger: a query that
stopped is started again from its checkpoint, rows later than the watermark are counted; its figures on /metrics."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.config import PulseConfig
from pulse.lifecycle import Periodic
from pulse.redact import redact_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from audit import FindingsLog, ReconcileStream
    from pulse.alerts import AlertSender, Incidents
    from slo import StreamSettings, Topic

_LOG = logging.getLogger(__name__)

READ_AS_TIME = ("time", "minute")
"""The audit rows' timestamp columns the reconciliation reads (from their RFC 3339 text)."""


def audit_topics(config: PulseConfig) -> dict[str, Topic]:
    """`client` and `broker` -> the SLI sink's topic holding those rows."""
    from audit import BROKER_STREAM, CLIENT_STREAM
    from slo import Topic

    prefix = config.sli_sink.topic_prefix
    return {
        role: Topic(prefix + stream.name, stream.name, stream.version, stream.schema)
        for role, stream in (("client", CLIENT_STREAM), ("broker", BROKER_STREAM))
    }


def reconcile_rows(spark: SparkSession, topics: Mapping[str, Topic], settings: StreamSettings) -> DataFrame:
    """The count rows of both topics, as one streaming frame (audit.count_rows)."""
    from audit import count_rows
    from slo import kafka_rows

    client = kafka_rows(spark, topics["client"], settings, READ_AS_TIME)
    broker = kafka_rows(spark, topics["broker"], settings, READ_AS_TIME)
    return count_rows(client, broker)


class ReconcileRunner:
    """One part of `run`: the first tick (on its own thread, so `run` starts without waiting for the JVM) starts the
    query; each tick counts late rows and starts a stopped query again from its checkpoint."""

    def __init__(
        self,
        stream: ReconcileStream,
        rows: Callable[[SparkSession], DataFrame],
        session: Callable[[], SparkSession],
        trigger_s: float,
        log: FindingsLog | None = None,
        owns_session: bool = True,
        alerts: tuple[Incidents, AlertSender, Mapping[str, str]] | None = None,
    ) -> None:
        """`session` makes (or returns) the SparkSession on the first tick; with `owns_session` `stop` stops it
        (in `run` the SLO schedule owns it when there is one). `alerts`: the incidents, the sink and the routing
        labels the findings' alerts go through (audit.findings_alerts), each tick."""
        self._alerts = alerts
        self.stream = stream
        self._rows = rows
        self._session_factory = session
        self._owns_session = owns_session
        self._spark: SparkSession | None = None
        self.log = log
        self._query: StreamingQuery | None = None
        self._progress_seen = -1
        self.late = 0
        """Count rows later than the watermark (their minute already judged), left out since the start."""
        self.restarts = 0
        self.last_error: str | None = None
        self._loop = Periodic("audit-reconcile", trigger_s, self.run_once)

    def start(self) -> None:
        if self.log is not None:
            self.log.start()
        self._loop.start()

    def run_once(self) -> bool:
        """Start or restart the query, count late rows; False when the query had stopped (or could not start)."""
        from slo import dropped_as_late

        query = self._query
        try:
            if query is None or not query.isActive:
                if query is not None:
                    failure = query.exception()
                    self.last_error = redact_text(str(failure).splitlines()[0] if failure else "stopped")[:500]
                    _LOG.warning("audit reconcile: the query stopped (%r); started again", self.last_error)
                    self.restarts += 1
                    self._progress_seen = -1
                if self._spark is None:
                    self._spark = self._session_factory()
                self._query = self.stream.start(self._rows(self._spark))
                return query is None
            progress: list[dict[str, Any]] = [json.loads(p.json) for p in query.recentProgress]
            dropped, self._progress_seen = dropped_as_late(progress, self._progress_seen)
            self.late += dropped
            self._send_alerts()
            return True
        except Exception as exc:  # Spark or Kafka away, a bug: counted as a restart on the next tick
            self.last_error = redact_text(f"{type(exc).__name__}: {exc}")[:500]
            _LOG.warning("audit reconcile: %r", self.last_error)
            return False

    def _send_alerts(self) -> None:
        if self._alerts is None:
            return
        from audit import HOLD_S, incident_alerts

        incidents, sender, routing = self._alerts
        judged = self.stream.judged()
        firing = [
            a.model_copy(update={"labels": {**routing, **a.labels}})
            for a in incident_alerts(judged.recent, judged.newest_minute_ms, HOLD_S * 1000)
        ]
        sender.send(incidents.reconcile(firing, datetime.now(UTC)))

    def stop(self) -> None:
        """The loop, then the query, Spark when this runner owns it, then the findings log."""
        from kafka_pulse.runner.slo_schedule import stop_spark

        self._loop.stop(30)
        try:
            if self._query is not None and self._query.isActive:
                self._query.stop()
        finally:
            if self._owns_session:
                stop_spark(self._spark)
                self._spark = None
            if self.log is not None:
                self.log.stop()


class ReconcileCollector(Collector):
    """The reconciliation's figures (`kafka_pulse_audit_*`, docs/metrics.md, "Data-flow audit") and its findings
    log's health."""

    PREFIX = "kafka_pulse_audit"

    def __init__(self, runner: ReconcileRunner) -> None:
        self.runner = runner

    def collect(self) -> Iterator[Metric]:
        from audit import KINDS, FindingsLogCollector

        if self.runner.log is not None:
            yield from FindingsLogCollector(self.runner.log).collect()
        judged = self.runner.stream.judged()
        findings = CounterMetricFamily(
            f"{self.PREFIX}_findings", "Findings of the reconciliation, by kind (docs/audit.md).", labels=["kind"]
        )
        records = CounterMetricFamily(
            f"{self.PREFIX}_records_astray",
            "Records the reconciliation's findings count, by kind (the sum of their counts).",
            labels=["kind"],
        )
        for kind in KINDS:
            findings.add_metric([kind], judged.findings[kind])
            records.add_metric([kind], judged.records[kind])
        yield findings
        yield records
        for name, text, value in (
            ("minutes_judged", "(cluster, topic, minute)s the reconciliation judged.", judged.minutes),
            ("reconcile_batches", "Micro-batches the reconciliation ran.", judged.batches),
            ("late_reports", "Count rows left out: their minute was judged before they came.", self.runner.late),
            ("reconcile_restarts", "Times the reconciliation's query stopped and was started again.",
             self.runner.restarts),
        ):  # fmt: skip
            family = CounterMetricFamily(f"{self.PREFIX}_{name}", text)
            family.add_metric([], value)
            yield family
        if judged.newest_minute_ms is not None:
            yield GaugeMetricFamily(
                f"{self.PREFIX}_judged_minute_timestamp_seconds",
                "Start of the newest minute judged.",
                value=judged.newest_minute_ms / 1000,
            )


def build_reconcile(
    config: PulseConfig,
    settings: StreamSettings,
    session: Callable[[], SparkSession],
    state: Path,
    owns_session: bool = True,
    sender: AlertSender | None = None,
) -> ReconcileRunner:
    """The runner `audit.reconcile` describes; its findings under `<audit.log.dir>/findings` when the log is on."""
    from audit import FindingsLog, ReconcileStream

    reconcile, log_settings = config.audit.reconcile, config.audit.log
    log = None
    if log_settings.enabled:
        directory = log_settings.dir if log_settings.dir is not None else state / "sli" / "audit"
        log = FindingsLog(directory, log_settings.flush_interval_s, log_settings.max_bytes, log_settings.queue_size)
    stream = ReconcileStream(
        int(reconcile.deadline_s),
        settings.checkpoint,
        counted_groups=frozenset(reconcile.counted_groups),
        log=log,
        trigger_s=reconcile.trigger_s,
    )
    topics = audit_topics(config)
    alerts = None
    if sender is not None:
        from pulse.alerts import Incidents

        alerts = (Incidents.from_config(config.alerting, reconcile.trigger_s), sender, dict(config.alerting.labels))
    return ReconcileRunner(
        stream,
        lambda spark: reconcile_rows(spark, topics, settings),
        session,
        reconcile.trigger_s,
        log,
        owns_session,
        alerts,
    )
