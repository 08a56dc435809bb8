"""The SLO burn-rate job on a schedule inside `kafka-pulse run`: every `slo.schedule_s`, evaluate every SLO at the
current minute, write Parquet (`slo.results_dir`), push the budget gauges (`slo.pushgateway_url`), serve the same
gauges on the process's /metrics, and hand the alert states to Alertmanager through the alert sink.

Spark starts on the first evaluation (never when no SLO is configured) and is stopped with the schedule when this
process created it. A failed evaluation is logged and counted; its SLOs' open alerts are held, never resolved, as
slo/alerting.py does for an unknown state. No failure of a cycle (evaluation, publishing, alert delivery) ends the
schedule: it is logged, counted in `kafka_pulse_slo_schedule_failures_total` and the next cycle runs as planned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.config import SloConfig
from pulse.lifecycle import Periodic
from pulse.redact import redact_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from slo import Slo, SloAlertDelivery, SloResult

_LOG = logging.getLogger(__name__)
Evaluator = Callable[["SparkSession", Sequence["Slo"], datetime], list["SloResult"]]
"""One cycle's evaluation: the batch job (slo.evaluate) or the stream (runner/slo_stream.py)."""
STOP_WAIT_S = 10.0
"""How long `stop` lets an evaluation in flight finish before it stops Spark under it."""


class SloSchedule:
    """Evaluates `slos` every `settings.schedule_s` on a thread of its own; `start` returns at once."""

    def __init__(
        self,
        slos: Sequence[Slo],
        settings: SloConfig,
        session: Callable[[], SparkSession],
        owns_session: bool = True,
        delivery: SloAlertDelivery | None = None,
        descriptions: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        evaluator: Evaluator | None = None,
    ) -> None:
        """`session` makes (or returns) the SparkSession on first use; with `owns_session` it is stopped, its JVM
        included, by `stop`. `evaluator` computes a cycle's results (default: the batch job, slo.evaluate)."""
        self.slos = list(slos)
        self.settings = settings
        self._session_factory = session
        self._owns_session = owns_session
        self._session: SparkSession | None = None
        self.delivery = delivery
        self.descriptions = dict(descriptions or {})
        self._clock = clock
        self._evaluator = evaluator
        self.loop = Periodic("slo-schedule", settings.schedule_s, lambda: self.run_once(self._clock()))
        """Its thread: self-health reads the last successful cycle and the liveness from it."""
        self.latest: list[SloResult] = []
        self._gauges = CollectorRegistry()
        self.runs: dict[str, int] = {"ok": 0, "failed": 0}
        self.failures = 0
        """Cycles that did not complete (evaluation, publishing or delivery failed); each was retried next cycle."""
        self.last_success_s: float | None = None
        """Unix time the last cycle completed, alerts handed to the sink included."""
        self.last_duration_s: float | None = None
        self.last_error: str | None = None
        self.refused_results = 0
        """Results refused because their SLO name and labels repeated another's in one evaluation (slo/identity.py)."""

    def start(self) -> None:
        self.loop.start()

    def is_alive(self) -> bool:
        """Whether its thread runs (False before `start` and after `stop`)."""
        return self.loop.is_alive()

    def run_once(self, at: datetime) -> bool:
        """One evaluation at `at` and everything that follows from it; False when any of it failed (logged and
        counted); never raises, so the schedule's thread outlives any one cycle."""
        try:
            if self._cycle(at):
                self.last_success_s = time.time()
                return True
        except Exception as exc:
            self.last_error = redact_text(
                f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
            )
            _LOG.error("SLO schedule: the cycle at %s failed: %s; retried next cycle", at.isoformat(), self.last_error)
            _LOG.debug("SLO schedule cycle failure", exc_info=True)
        self.failures += 1
        return False

    def _cycle(self, at: datetime) -> bool:
        from slo import alert_states, evaluate, gauges

        started = time.monotonic()
        try:
            if self._session is None:
                self._session = self._session_factory()
            results = (self._evaluator or evaluate)(self._session, self.slos, at)
        except Exception as exc:  # Spark or a source failing must not end the schedule (nor `run`)
            self.runs["failed"] += 1
            self._gauges = CollectorRegistry()  # no budget gauges from an older evaluation passed off as current
            self.last_error = redact_text(f"{type(exc).__name__}: {exc}".splitlines()[0])
            if self.loop.stopping.is_set():  # `stop` stopped Spark under it
                _LOG.info("SLO evaluation at %s cut short by the stop: %s", at.isoformat(), self.last_error)
                return False
            _LOG.error("SLO evaluation at %s failed: %s", at.isoformat(), self.last_error)
            if self.delivery is not None:
                self.delivery.deliver([], at)  # holds open alerts, drains the spool
            return False
        finally:
            self.last_duration_s = time.monotonic() - started
        self.latest = results
        self.refused_results += sum(r.repeated_label_sets for r in results)
        self._gauges = gauges(results)
        self.runs["ok"] += 1
        self.last_error = None
        self._publish(results)
        if self.delivery is not None:
            self.delivery.deliver(alert_states(results, self.descriptions), at)
        return True

    def _publish(self, results: list[SloResult]) -> None:
        from slo import PushFailed, push_gauges, write_results

        if self.settings.results_dir is not None:
            try:
                write_results(results, Path(self.settings.results_dir))
            except OSError as exc:
                _LOG.error("SLO results not written to %s: %s", self.settings.results_dir, exc)
        if self.settings.pushgateway_url is not None:
            try:
                push_gauges(results, self.settings.pushgateway_url, login=self.settings.pushgateway_client)
            except PushFailed as exc:
                _LOG.warning("SLO gauges not pushed: %s", exc)

    def stop(self) -> None:
        """End the schedule; an evaluation still running after STOP_WAIT_S is cut short by stopping Spark under it
        (when this schedule owns the session), so a SIGTERM never waits on a long job or a JVM start."""
        self.loop.stop(STOP_WAIT_S)
        stop_query = getattr(self._evaluator, "stop", None)
        if stop_query is not None:
            try:
                stop_query()
            except Exception as exc:  # Spark being torn down under it: the session stop below ends it anyway
                _LOG.debug("SLO stream stop: %s", exc)
        if self._owns_session:
            stop_spark(self._session)
            self._session = None
        self.loop.stop(STOP_WAIT_S)

    def gauges(self) -> Iterator[Metric]:
        """The latest evaluation's budget gauges (slo/output.py's families), for /metrics; none while the latest
        evaluation failed (`runs{result="failed"}` counts it, the last success time stays)."""
        yield from self._gauges.collect()


def stop_spark(session: SparkSession | None) -> None:
    """Stop the session and the JVM behind it (PySpark leaves its gateway process running until Python exits);
    with no session yet, a gateway being launched for one is stopped too."""
    import sys

    if "pyspark" not in sys.modules:
        return  # Spark was never started in this process
    from pyspark import SparkContext

    if session is not None:
        session.stop()
    gateway: Any = SparkContext._gateway
    if gateway is None:
        return
    try:
        gateway.shutdown()
    except Exception as exc:  # already gone
        _LOG.debug("Spark gateway shutdown: %s", exc)
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except Exception:
            process.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None


class SloScheduleCollector(Collector):
    """The schedule's own health and the latest budget gauges on the process's registry."""

    def __init__(self, schedule: SloSchedule) -> None:
        self.schedule = schedule

    def collect(self) -> Iterator[Metric]:
        s = self.schedule
        runs = CounterMetricFamily(
            "kafka_pulse_slo_schedule_runs", "Scheduled SLO evaluations by result (ok, failed).", labels=["result"]
        )
        for result, count in sorted(s.runs.items()):
            runs.add_metric([result], count)
        yield runs
        yield CounterMetricFamily(
            "kafka_pulse_slo_schedule_failures",
            "Schedule cycles that failed (evaluation, publishing or alert delivery); the next cycle runs anyway.",
            s.failures,
        )
        yield CounterMetricFamily(
            "kafka_pulse_slo_schedule_refused_results",
            "SLO results refused because another of the same evaluation had the same SLO name and labels.",
            s.refused_results,
        )
        if s.last_success_s is not None:
            yield GaugeMetricFamily(
                "kafka_pulse_slo_schedule_last_success_timestamp_seconds",
                "Unix time of the last cycle that completed (evaluation, publishing, alerts handed to the sink).",
                s.last_success_s,
            )
        if s.last_duration_s is not None:
            yield GaugeMetricFamily(
                "kafka_pulse_slo_schedule_duration_seconds", "Wall time of the last evaluation.", s.last_duration_s
            )
        yield from s.gauges()
