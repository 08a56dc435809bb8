"""`slo stream`: SLI events on Kafka (docs/sli-log.md, "Kafka sink") -> minute buckets per SLO instance, with
Spark Structured Streaming's own Kafka source (docs/slo.md, "Streaming from Kafka").

Each source kind reads its topic (`events` the canary's, `lag` the lag groups', `audit` the broker-side audit's);
rows are decoded with the log's schema, copies of one event (same `kp-source`/`kp-seq`, delivery is at least once)
dropped within the watermark (Spark's state) and scored by slo/sources.py as the batch job scores Parquet rows.
The driver sums each micro-batch's events per minute onto the buckets' values so far (slo/stream_buckets.py),
writes the buckets it changed, as absolute values, as one file named after the batch id (a replay after a crash
starts from the table as the last committed batch left it and rewrites the same file: exactly once with the
checkpoint) and folds them into running sums (slo/bucket_sums.py) that slo/buckets.py evaluates.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming import StreamingQuery

from pulse.errors import ConfigError
from slo.bucket_sums import RunningSums
from slo.bucket_table import BucketTable
from slo.buckets import add_buckets, evaluate_sums, ring_minutes
from slo.checkpoint import last_committed, watermark_ms
from slo.job import prepare
from slo.model import EventsSource, Slo
from slo.results import SloResult
from slo.sources import score_frame
from slo.stream_buckets import EVENT_COLUMNS, absolute_buckets, minute_sums

KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
"""Spark's Kafka source: 4.2.0 is the newest on Maven Central (no 4.3.x); it runs on pyspark 4.3.0 (measured:
tests/integration/slo/test_slo_stream.py)."""

SHIPPED_WITH_SPARK = (
    "org.apache.hadoop:hadoop-client-runtime,org.apache.hadoop:hadoop-client-api,org.slf4j:slf4j-api,"
    "org.xerial.snappy:snappy-java,at.yawk.lz4:lz4-java,com.google.code.findbugs:jsr305,"
    "org.scala-lang.modules:scala-parallel-collections_2.13"
)
"""The connector's dependencies that pyspark's own jars already hold: not fetched twice."""


def package_settings(cache: Path) -> dict[str, str]:
    """Session settings that fetch the Kafka source from Maven Central once into `cache` (Ivy's cache beside the
    Kafka jars); Spark ships the jars to executors itself."""
    return {
        "spark.jars.packages": KAFKA_PACKAGE,
        "spark.jars.ivy": str(cache / "spark-ivy"),
        "spark.jars.excludes": SHIPPED_WITH_SPARK,
    }


_JAAS = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def spark_kafka_options(librdkafka: Mapping[str, str]) -> dict[str, str]:
    """The Kafka source's `kafka.*` options for a connection profile (pulse.profile.client_config): the Java
    client spells SASL logins and PEM CA files differently; a client certificate is refused (not mapped yet)."""
    options = {
        "kafka.bootstrap.servers": librdkafka["bootstrap.servers"],
        "kafka.security.protocol": librdkafka.get("security.protocol", "PLAINTEXT"),
    }
    mechanism = librdkafka.get("sasl.mechanism")
    if mechanism is not None:
        if mechanism not in _JAAS:
            raise ConfigError(f"slo stream: SASL mechanism {mechanism} is not supported by the stream")
        user, password = (librdkafka["sasl.username"], librdkafka["sasl.password"])
        quoted = [v.replace("\\", "\\\\").replace('"', '\\"') for v in (user, password)]
        options["kafka.sasl.mechanism"] = mechanism
        options["kafka.sasl.jaas.config"] = (
            f'{_JAAS[mechanism]} required username="{quoted[0]}" password="{quoted[1]}";'
        )
    if "ssl.certificate.location" in librdkafka:
        raise ConfigError("slo stream: a TLS client certificate is not supported by the stream")
    if "ssl.ca.location" in librdkafka:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = librdkafka["ssl.ca.location"]
    if "ssl.endpoint.identification.algorithm" in librdkafka:
        verify = librdkafka["ssl.endpoint.identification.algorithm"]
        options["kafka.ssl.endpoint.identification.algorithm"] = "" if verify == "none" else verify
    return options


@dataclass(frozen=True)
class Topic:
    """Where the rows of one source kind arrive, and their shape."""

    name: str
    stream: str
    """The `kp-schema` header value (`canary`, `lag-groups`)."""
    version: int
    """The one `kp-schema-version` read; rows of another version are not counted."""
    schema: pa.Schema
    """The log's Arrow schema (canary/sli_log.py, lag/notify/evaluation_log.py)."""


@dataclass(frozen=True)
class StreamSettings:
    kafka: Mapping[str, str]
    """`spark_kafka_options` of the SLI cluster."""
    checkpoint: str
    """Spark's checkpoint location, a local path or a Hadoop filesystem URL (pulse/locations.py), passed as is."""
    buckets: str
    """The bucket table's location, likewise (slo/bucket_table.py)."""
    watermark_s: int = 120
    """Events later than this behind the newest event time seen are not counted (Spark drops them)."""
    trigger_s: float = 60.0
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None


def _header(name: str) -> Column:
    return F.expr(f"CAST(try_element_at(filter(headers, h -> h.key = '{name}'), 1).value AS STRING)")


def kafka_rows(
    spark: SparkSession, topic: Topic, settings: StreamSettings, timestamps: Sequence[str] = ("time",)
) -> DataFrame:
    """One topic's rows of its `kp-schema` and version, decoded with the log's schema; `__id` names an event (its
    `kp-source`:`kp-seq`, else its offset) and the `timestamps` columns are read from their RFC 3339 text. No
    watermark yet: the caller sets it (the audit's reconciliation reads its rows by another column)."""
    reader = spark.readStream.format("kafka").options(**settings.kafka)
    reader = reader.option("subscribe", topic.name).option("includeHeaders", "true")
    reader = reader.option("startingOffsets", settings.starting_offsets).option("failOnDataLoss", "false")
    if settings.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
    schema = from_arrow_schema(topic.schema)
    text_schema = schema.fromJson(
        {
            **schema.jsonValue(),
            "fields": [_as_text(f) if f["name"] in timestamps else f for f in schema.jsonValue()["fields"]],
        }
    )
    identity = F.coalesce(
        F.concat_ws(":", _header("kp-source"), _header("kp-seq")),
        F.concat_ws(":", F.lit("offset"), F.col("partition").cast("string"), F.col("offset").cast("string")),
    )
    decoded = (
        reader.load()
        .where((_header("kp-schema") == topic.stream) & (_header("kp-schema-version") == str(topic.version)))
        .select(identity.alias("__id"), F.from_json(F.col("value").cast("string"), text_schema).alias("r"))
        .select("__id", "r.*")
    )
    for name in timestamps:
        decoded = decoded.withColumn(name, F.to_timestamp(F.col(name))).where(F.col(name).isNotNull())
    return decoded


def _events(spark: SparkSession, topic: Topic, settings: StreamSettings) -> DataFrame:
    """One topic's rows: the log's columns, `time` as a timestamp, copies of an event dropped within the watermark."""
    decoded = kafka_rows(spark, topic, settings)
    unique = decoded.withWatermark("time", f"{settings.watermark_s} seconds").dropDuplicatesWithinWatermark(["__id"])
    return unique.withColumn("__ts", F.unix_seconds(F.col("time")))


def _as_text(field: dict[str, Any]) -> dict[str, Any]:
    return {**field, "type": "string"}


def bucket_frame(
    spark: SparkSession, slos: Sequence[Slo], topics: Mapping[str, Topic], settings: StreamSettings
) -> DataFrame:
    """The streaming scored events, deduplicated: `EVENT_COLUMNS` (slo index, instance, event time in us, ...).
    The driver sums them per minute (slo/stream_buckets.py): a Spark aggregation would be a second stateful
    operator, with its own shuffle and state commits every micro-batch, for a thousand rows a minute."""
    prepare(spark)
    by_kind: dict[str, list[tuple[int, Slo, str]]] = {}
    for index, slo in enumerate(slos):
        if not isinstance(slo.source, EventsSource) or slo.source.kind not in topics:
            raise ConfigError(f"slo {slo.name!r}: the stream reads only events, lag and audit sources from Kafka")
        by_kind.setdefault(slo.source.kind, []).append((index, slo, f"slo {slo.name!r}"))
    frames = [
        score_frame(_events(spark, topics[kind], settings), members, carry=("time",))
        for kind, members in sorted(by_kind.items())
    ]
    scored = frames[0]
    for frame in frames[1:]:
        scored = scored.unionByName(frame)
    return scored.withColumn("us", F.unix_micros("time")).select(*EVENT_COLUMNS)


def dropped_as_late(progress: Sequence[Mapping[str, Any]], after_batch: int) -> tuple[int, int]:
    """Rows Spark left out as later than the watermark in the micro-batches after `after_batch` (pure, from each
    batch's progress: every stateful operator's `numRowsDroppedByWatermark`), and the newest batch id seen. The
    stream's one operator is the deduplication; the driver drops the rest (slo/stream_buckets.py)."""
    dropped, newest = 0, after_batch
    for batch in progress:
        batch_id = int(batch.get("batchId", -1))
        if batch_id <= after_batch:
            continue
        newest = max(newest, batch_id)
        dropped += sum(int(op.get("numRowsDroppedByWatermark", 0)) for op in batch.get("stateOperators", []))
    return dropped, newest


def stream_settings(cores: int) -> dict[str, str]:
    """SQL settings the stream's query starts with (pure): shuffle partitions sized to the executors' `cores`, not
    the session's 8, as the deduplication runs a task and commits a state file per partition every micro-batch,
    and its state is small (ids within the watermark). A checkpoint keeps its first count. No micro-batch without
    data: it would only evict state (done by the next batch as well) and move the watermark by which Spark judges
    late rows, which the driver applies itself (slo/stream_buckets.py); it cost a whole micro-batch per minute."""
    return {
        "spark.sql.shuffle.partitions": str(max(1, cores)),
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    }


SKEW_MIN = 1440
"""Minutes the running sums keep beyond the longest window: events up to a day ahead of the evaluation time (clock
skew, or `--at` before the newest events) leave the window still in the ring."""


class BucketStream:
    """The running stream: writes each micro-batch's buckets to the table and keeps the sums the cycles evaluate.
    On start the sums are refilled from the table as the last committed micro-batch left it (the entry of a batch
    cut short is replayed), so a restart evaluates what it evaluated before; a table at a URL is read and written
    through Spark, a local one with pyarrow."""

    def __init__(self, slos: Sequence[Slo], settings: StreamSettings) -> None:
        self.slos = list(slos)
        self.settings = settings
        self.sums = RunningSums(ring_minutes(self.slos) + SKEW_MIN)
        self._lock = threading.Lock()
        self.batches = 0
        self.late_dropped = 0
        """Events not counted because they came later than the watermark, since this process started."""
        self._progress_seen = -1
        self._late_told = 0
        self.table = BucketTable(settings.buckets)

    def start(self, spark: SparkSession, topics: Mapping[str, Topic], available_now: bool = False) -> StreamingQuery:
        """Refill the sums from the table, then start the query (it resumes from the checkpoint, if any)."""
        self.table.prepare(spark)
        table = self.table.read(spark)
        committed = last_committed(spark, self.settings.checkpoint)
        if table.num_rows and pc.max(table["batch"]).as_py() > committed:  # a copy only when a batch was cut short
            table = table.filter(pc.less_equal(table["batch"], committed))
        add_buckets(self.sums, self.slos, table)
        writer = (
            bucket_frame(spark, self.slos, topics, self.settings)
            .writeStream.outputMode("append")
            .option("checkpointLocation", self.settings.checkpoint)
            .foreachBatch(self._batch)
            .queryName("kafka-pulse-slo-stream")
        )
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{self.settings.trigger_s} seconds")
        # The query copies the session's settings as it starts; the session gets its own back for batch jobs.
        wanted = stream_settings(spark.sparkContext.defaultParallelism)
        kept = {key: spark.conf.get(key, None) for key in wanted}
        for key, value in wanted.items():
            spark.conf.set(key, value)
        try:
            return writer.start()
        finally:
            for key, old in kept.items():
                if old is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, old)

    def _batch(self, frame: DataFrame, batch_id: int) -> None:
        """foreachBatch: the batch's buckets as the table's entry `part-<batch id>`, then the sums. Arrow, not
        `Row` objects: a thousand events a minute cross to the driver as columns."""
        events = frame.toArrow()
        minutes, late = minute_sums(events, watermark_ms(frame.sparkSession, self.settings.checkpoint, batch_id))
        with self._lock:  # reads the sums an evaluation may be reading
            table, older = absolute_buckets(minutes, [s.name for s in self.slos], self.sums, batch_id)
        self.table.write(frame.sparkSession, table, batch_id)
        with self._lock:
            add_buckets(self.sums, self.slos, table)
            self.batches += 1
            self.late_dropped += late + older

    def count_late(self, query: StreamingQuery) -> int:
        """Add the late events of the micro-batches finished since the last call (Spark keeps the last 100 batches'
        progress: call at least that often); returns how many were added since the last call, with those the
        driver left out itself."""
        progress = [json.loads(p.json) for p in query.recentProgress]
        dropped, self._progress_seen = dropped_as_late(progress, self._progress_seen)
        with self._lock:
            self.late_dropped += dropped
            grown, self._late_told = self.late_dropped - self._late_told, self.late_dropped
        return grown

    def evaluate(self, at: datetime) -> list[SloResult]:
        """Every SLO instance at `at` from the buckets received so far: a few lookups per hour of each window."""
        with self._lock:
            return evaluate_sums(self.slos, at, self.sums)
