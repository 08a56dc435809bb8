"""The SLI cluster away for 2 minutes under `run` with `slo.engine: stream`: the canary keeps probing the monitored
cluster, its events wait in the SLI sink's spool while the SLI cluster's one broker is dead, and once it is back the
stream reads them all; the SLO evaluated from the stream's bucket table then equals the batch job's evaluation over
the canary's Parquet log of the same probes (no event lost, none counted twice, none dropped as late)."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from canary.sli_log import SCHEMA
from devstack.topology import Security
from kafka_pulse.cli.main import cli
from kafka_pulse.clusters import dev_cluster_config
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, _start
from tests.fixtures.pulse_process import PulseProcess, PulseProcesses
from tests.fixtures.spark import iso, spark
from tests.integration.canary.canary_support import FAST

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the module-scoped fixture

OUTAGE_S = 120.0
"""The SLI cluster's broker dead this long: the scenario, not a wait for a condition."""
DELIVERED = re.compile(r"^kafka_pulse_sli_sink_events_delivered_total ([0-9.e+]+)$", re.M)
PENDING = re.compile(r"^kafka_pulse_sli_sink_pending_events ([0-9.e+]+)$", re.M)
LATE = re.compile(r"^kafka_pulse_slo_stream_late_events_total ([0-9.e+]+)$", re.M)


@pytest.fixture(scope="module")
def sli_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """The SLI cluster: one broker of its own, so killing it takes the whole cluster away."""
    yield from _start(tmp_path_factory.mktemp("kafka-sli-outage"), 1, KAFKA_VERSION, Security.PLAINTEXT, "sli")


def old_row() -> dict[str, object]:
    """One probe older than the window, in its own date folder: the spec check needs a Parquet file in the source."""
    return {name: None for name in SCHEMA.names} | {
        "time": datetime.now(UTC) - timedelta(days=40), "cluster": "dev", "topic": "t", "partition": 0,
        "producer_id": "p", "sequence": 0, "produce_ok": True, "lost": False, "duplicate": False,
        "out_of_order": False,
    }  # fmt: skip


def sample(run: PulseProcess, pattern: re.Pattern[str]) -> float | None:
    found = pattern.search(run.client.get(run.url + "/metrics").text)
    return None if found is None else float(found.group(1))


def evaluate(config: Path, at: datetime, *more: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(config), "--at", iso(at), "--json", *more])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.output)
    return found


def test_a_two_minute_sli_cluster_outage_loses_no_event_of_the_stream(
    kafka: KafkaHandle, sli_kafka: KafkaHandle, spark: SparkSession, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    sli_log = tmp_path / "sli"
    old = old_row()
    folder = sli_log / f"date={old['time']:%Y-%m-%d}"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([old], schema=SCHEMA), folder / "part-old.parquet")
    monitored = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    sli = dev_cluster_config(sli_kafka.cluster).model_dump(mode="json") | {"name": "sli"}
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    config = {
        "clusters": [monitored, sli],
        "collectors": {"enabled": False},
        "lag": {"enabled": False},
        "canary": {**FAST, "cluster": monitored["name"], "topic": f"canary-{uuid.uuid4().hex[:8]}",
                   "sli_log": {"dir": str(sli_log), "flush_interval_s": 2.0}},
        "sli_sink": {"enabled": True, "cluster": "sli", "topic_prefix": prefix},
        "slo": {"engine": "stream", "spark_master": "local[1]", "driver_memory": "512m", "schedule_s": 5},
        "slos": [{"name": "produce", "source": {"type": "events", "path": str(sli_log)}, "good": "produce_ok",
                  "total": "NOT duplicate", "objective": 99.0, "window": "30d"}],
    }  # fmt: skip
    buckets = tmp_path / "slo-stream" / "buckets"
    with pulse_process.start("run", config, home=tmp_path) as run:
        poll(lambda: sorted(buckets.glob("part-*.parquet")), bool, 300, "the stream's first buckets", interval_s=1)
        delivered = poll(lambda: sample(run, DELIVERED), lambda n: bool(n), 30, "events delivered to the SLI cluster")
        sli_kafka.cluster.kill(1)
        killed = time.monotonic()
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - killed)))  # the outage
        waiting = sample(run, PENDING)
        assert waiting is not None and waiting > 0, waiting  # the canary's events waited in the spool
        sli_kafka.cluster.restart(1, cache_dir())
        poll(lambda: sample(run, PENDING), lambda n: n == 0, 180, "the spool delivered", interval_s=1)
        assert (sample(run, DELIVERED) or 0) > (delivered or 0) + waiting - 1
        at = datetime.now(UTC).replace(second=0, microsecond=0)
        # Every probe settled before `at` is in both the Parquet log (flushed every 2 s) and, once the stream's
        # micro-batches catch up, in its bucket table: await the two evaluations agreeing.
        table = ["--buckets", str(buckets)]
        batch = poll(lambda: evaluate(run.config_path, at), lambda b: b == evaluate(run.config_path, at, *table),
                     240, f"the stream's buckets answering as the batch job at {iso(at)}", interval_s=5)  # fmt: skip
        assert sample(run, LATE) == 0.0
    (produce,) = batch["slos"]
    assert produce["total"] > OUTAGE_S, produce  # the outage's minutes are in: probes every 0.5 s
