"""The SLO stream's wiring for `run` (`slo.engine: stream`) and `slo stream`: which topics hold each source kind's
rows, the stream's settings from the config, and the evaluation `run`'s SLO schedule calls each cycle."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.config import ClusterConfig, PulseConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from slo import BucketStream, Slo, SloResult, StreamSettings, Topic


def sink_topics(config: PulseConfig) -> dict[str, Topic]:
    """Source kind -> the SLI sink's topic holding its rows (`events`: the canary's, `lag`: lag groups', `audit`:
    the broker-side audit's)."""
    from audit import BROKER_STREAM
    from canary import CANARY_STREAM
    from lag import GROUPS_STREAM
    from slo import Topic

    prefix = config.sli_sink.topic_prefix
    return {
        kind: Topic(prefix + stream.name, stream.name, stream.version, stream.schema)
        for kind, stream in (("events", CANARY_STREAM), ("lag", GROUPS_STREAM), ("audit", BROKER_STREAM))
    }


def stream_root(configured: str | None, state_dir: Path) -> str:
    """Where the stream keeps its state: `slo.stream_dir` (a path or a URL, already checked) or
    `<state dir>/slo-stream`."""
    return configured if configured is not None else str(state_dir / "slo-stream")


def stream_settings(cluster: ClusterConfig, root: str, watermark_s: float, trigger_s: float) -> StreamSettings:
    """The stream reading `cluster` (the SLI sink's), its checkpoint and bucket table under `root` (a local path or
    a Hadoop filesystem URL, handed to Spark as written)."""
    from pulse.locations import join
    from pulse.profile import client_config
    from slo import StreamSettings, spark_kafka_options

    return StreamSettings(
        kafka=spark_kafka_options(client_config(cluster)),
        checkpoint=join(root, "checkpoint"),
        buckets=join(root, "buckets"),
        watermark_s=int(watermark_s),
        trigger_s=float(trigger_s),
    )


class StreamEvaluator(Collector):
    """`run`'s evaluation with `slo.engine: stream`: the first cycle starts the streaming query on the schedule's
    session; each cycle evaluates the buckets received so far. A query that stopped fails its cycle (counted, open
    alerts held, as any failed evaluation) and is started again from its checkpoint, with the sums refilled from the
    bucket table, so a replayed micro-batch is never added twice."""

    def __init__(self, slos: Sequence[Slo], settings: StreamSettings, topics: Mapping[str, Topic]) -> None:
        self._slos = list(slos)
        self._settings = settings
        self._topics = dict(topics)
        self._stream: BucketStream | None = None
        self._query: StreamingQuery | None = None
        self.restarts = 0
        self._late_before = 0
        """Late events counted by the streams before the last restart."""

    def __call__(self, session: SparkSession, slos: Sequence[Slo], at: datetime) -> list[SloResult]:
        from slo import BucketStream

        query = self._query
        if query is None or not query.isActive:
            failure = query.exception() if query is not None else None
            if self._stream is not None:
                self._late_before += self._stream.late_dropped
                self.restarts += 1
            self._stream = BucketStream(self._slos, self._settings)
            self._query = query = self._stream.start(session, self._topics)
            if failure is not None:
                reason = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
                raise RuntimeError(f"the SLO stream stopped ({reason}); started again from its checkpoint")
        assert self._stream is not None
        self._stream.count_late(query)
        return self._stream.evaluate(at)

    def stop(self) -> None:
        """Stop the query (the session's owner stops Spark after)."""
        if self._query is not None and self._query.isActive:
            self._query.stop()

    @property
    def late_dropped(self) -> int:
        return self._late_before + (self._stream.late_dropped if self._stream is not None else 0)

    def collect(self) -> Iterator[Metric]:
        late = CounterMetricFamily(
            "kafka_pulse_slo_stream_late_events",
            "SLI events later than the stream's watermark, left out (slo.stream_watermark_s).",
        )
        late.add_metric([], float(self.late_dropped))
        yield late
        restarts = CounterMetricFamily(
            "kafka_pulse_slo_stream_restarts", "Times the SLO stream's query stopped and was started again."
        )
        restarts.add_metric([], float(self.restarts))
        yield restarts
