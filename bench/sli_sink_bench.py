"""Which encoding the SLI sink puts on Kafka (pulse/sli_sink/encode.py): bytes per event, raw and after the
producer's batch compression, and encode/decode CPU per event, for canary and lag group rows.

    python bench/sli_sink_bench.py [--rows 20000] [--kafka-events 100000] [--figures-out FILE]

Candidates, one Kafka record per event unless said otherwise:
- json-object: the row as a JSON object with its column names, nulls included (what the sink sends);
- json-sparse: the same without the null columns;
- json-array: the values alone, in schema order (the reader must know the schema version's column order);
- arrow-row: an Arrow IPC stream of one row (schema + record batch);
- arrow-batch: one Arrow IPC stream per 1,000 rows, one record for all of them (figures per event).
"Compressed" is zstd (level 3, librdkafka's default) over 1,000 consecutive values, as a producer batch is
compressed. Decode is back to a pyarrow Table of the schema. Our peer for CPU is json-object.

With `--kafka-events N` it also starts a 1-node Kafka 4.x dev cluster and puts N canary events through a real
`SliSink` (hand-off, spool, idempotent producer): live (offered in tables of 100 while the sink delivers) and as a
backlog (N events spooled with no cluster reachable, then drained by a restarted sink), in events per second and
CPU per event of the whole process.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
from confluent_kafka.admin import AdminClient, NewTopic
from figures import FigureLog

from canary.sli_log import SCHEMA as CANARY_SCHEMA
from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.topology import Security
from lag.notify.evaluation_log import GROUP_SCHEMA
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.sli_sink import KafkaDelivery, SliSink
from pulse.sli_sink.encode import Stream, decode_rows, encode_row

BATCH = 1000
ZSTD = pa.Codec("zstd", compression_level=3)


def canary_rows(n: int, rng: random.Random) -> pa.Table:
    t0 = datetime(2026, 11, 28, tzinfo=UTC)
    producer = uuid.uuid4().hex
    rows = []
    for i in range(n):
        ok = rng.random() > 0.01
        rows.append(
            {
                "time": t0 + timedelta(microseconds=i * 250_123),
                "cluster": "prod-eu-west-1",
                "target_cluster": None,
                "topic": "__pulse_canary",
                "partition": i % 12,
                "broker": 1 + i % 6,
                "rack": f"eu-west-1{'abc'[i % 3]}",
                "client_rack": "eu-west-1a",
                "producer_id": producer,
                "sequence": i // 12,
                "produce_ok": ok,
                "produce_latency_s": rng.lognormvariate(-5, 0.6) if ok else None,
                "consume_ok": ok,
                "e2e_latency_s": rng.lognormvariate(-4.5, 0.6) if ok else None,
                "lost": False,
                "duplicate": False,
                "out_of_order": False,
                "error": None if ok else "_MSG_TIMED_OUT",
                "offset": 1_000_000 + i // 12 if ok else None,
            }
        )
    return pa.Table.from_pylist(rows, schema=CANARY_SCHEMA)


def group_rows(n: int, rng: random.Random) -> pa.Table:
    t0 = datetime(2026, 11, 28, tzinfo=UTC)
    rows = []
    for i in range(n):
        lag = rng.randrange(0, 50_000)
        rows.append(
            {
                "time": t0 + timedelta(seconds=15 * (i // 500)),
                "cluster": "prod-eu-west-1",
                "group": f"payments-consumer-{i % 500:04d}",
                "status": "OK",
                "ok": True,
                "unknown": False,
                "complete": 1.0,
                "partition_count": 24,
                "totallag": lag * 3,
                "maxlag": lag,
                "maxlag_topic": f"payments.events.v{i % 7}",
                "maxlag_partition": i % 24,
                "lag_seconds": rng.random() * 10,
                "exact_lag_seconds": None,
                "reason": None,
            }
        )
    return pa.Table.from_pylist(rows, schema=GROUP_SCHEMA)


# ---- candidates: encode a table into record values; decode values back into a table --------------------------


def json_object(table: pa.Table) -> list[bytes]:
    return [encode_row(r) for r in table.to_pylist()]


def json_sparse(table: pa.Table) -> list[bytes]:
    return [encode_row({k: v for k, v in r.items() if v is not None}) for r in table.to_pylist()]


def _array_values(table: pa.Table) -> list[bytes]:
    out = []
    for r in table.to_pylist():
        values = [
            v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if isinstance(v, datetime) else v for v in r.values()
        ]
        out.append(json.dumps(values, separators=(",", ":")).encode())
    return out


def _decode_array(schema: pa.Schema, values: list[bytes]) -> pa.Table:
    names = schema.names
    return decode_rows(
        Stream("x", 1, schema), [json.dumps(dict(zip(names, json.loads(v), strict=True))).encode() for v in values]
    )


def arrow_row(table: pa.Table) -> list[bytes]:
    out = []
    for batch in table.to_batches(max_chunksize=1):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_batch(batch)
        out.append(sink.getvalue().to_pybytes())
    return out


def arrow_batch(table: pa.Table) -> list[bytes]:
    out = []
    for start in range(0, table.num_rows, BATCH):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(start, BATCH))
        out.append(sink.getvalue().to_pybytes())
    return out


def _decode_arrow(_schema: pa.Schema, values: list[bytes]) -> pa.Table:
    return pa.concat_tables([pa.ipc.open_stream(v).read_all() for v in values])


CANDIDATES: dict[str, tuple[Callable[[pa.Table], list[bytes]], Callable[[pa.Schema, list[bytes]], pa.Table]]] = {
    "json-object": (json_object, lambda schema, values: decode_rows(Stream("x", 1, schema), values)),
    "json-sparse": (json_sparse, lambda schema, values: decode_rows(Stream("x", 1, schema), values)),
    "json-array": (_array_values, _decode_array),
    "arrow-row": (arrow_row, _decode_arrow),
    "arrow-batch": (arrow_batch, _decode_arrow),
}


def measure(table: pa.Table, name: str) -> dict[str, Any]:
    encode, decode = CANDIDATES[name]
    started = time.process_time()
    values = encode(table)
    encode_s = time.process_time() - started
    started = time.process_time()
    back = decode(table.schema, values)
    decode_s = time.process_time() - started
    assert back.equals(table), f"{name} does not round-trip"
    events = table.num_rows
    per_record = events / len(values)  # rows each record holds (BATCH for arrow-batch)
    group = max(1, int(BATCH / per_record))
    compressed = sum(
        len(ZSTD.compress(b"".join(values[i : i + group]), asbytes=True)) for i in range(0, len(values), group)
    )
    return {
        "bytes": sum(map(len, values)) / events,
        "zstd_bytes": compressed / events,
        "encode_us": encode_s / events * 1e6,
        "decode_us": decode_s / events * 1e6,
    }


def through_kafka(events: int, log: FigureLog) -> None:
    """Events per second and CPU per event through a real sink on a 1-node cluster: live, then a spooled backlog."""
    table = canary_rows(events, random.Random(11))
    stream = Stream("canary", 1, CANARY_SCHEMA)
    with tempfile.TemporaryDirectory(prefix="pulse-bench-") as home:
        cluster = DevCluster.plan(Path(home) / "dev", 1, DEFAULT_VERSION, Security.PLAINTEXT)
        cluster.up(cache_dir())
        try:
            servers = cluster.spec.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": servers})
            admin.create_topics([NewTopic("bench-canary", 1, 1)])["bench-canary"].result(timeout=30)
            print(f"\nthrough a 1-node Kafka {DEFAULT_VERSION} ({events:,} canary events):\n")
            print("| phase | events/s | CPU us/event | wall s |")
            print("|---|---|---|---|")
            for phase in ("live", "backlog"):
                spool = Path(home) / f"spool-{phase}"
                if phase == "backlog":  # spool everything with no reachable cluster, then time the drain alone
                    offline = SliSink(spool, KafkaDelivery({"bootstrap.servers": "127.0.0.1:9"}, "bench-", 1.0))
                    offline.start()
                    for start in range(0, events, 100):
                        offline.offer(stream, table.slice(start, 100))
                    poll(offline.stats, lambda s: s.queued == events, 600, "the backlog spooled", interval_s=0.1)
                    offline.stop(grace_s=0)
                sink = SliSink(spool, KafkaDelivery({"bootstrap.servers": servers}, "bench-", 30.0))
                wall, cpu = time.monotonic(), time.process_time()
                sink.start()
                if phase == "live":
                    for start in range(0, events, 100):
                        sink.offer(stream, table.slice(start, 100))
                poll(sink.stats, lambda s: s.delivered >= events, 900, f"{phase}: all delivered", interval_s=0.05)
                wall, cpu = time.monotonic() - wall, time.process_time() - cpu
                sink.stop()
                print(f"| {phase} | {events / wall:,.0f} | {cpu / events * 1e6:.1f} | {wall:.1f} |")
                log.add(f"sli_sink.kafka.{phase}.events_per_s", f"{events} events", events / wall, "1/s", "higher")
                log.add(f"sli_sink.kafka.{phase}.cpu_us", f"{events} events", cpu / events * 1e6, "us")
        finally:
            cluster.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--kafka-events", type=int, default=0, help="also measure a real sink on a dev cluster")
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    rng = random.Random(7)
    log = FigureLog("sli_sink_bench")
    for kind, table in (("canary", canary_rows(args.rows, rng)), ("lag-groups", group_rows(args.rows, rng))):
        print(f"\n{kind} rows ({args.rows:,}):\n")
        print("| encoding | bytes/event | zstd bytes/event | encode CPU us/event | decode CPU us/event |")
        print("|---|---|---|---|---|")
        results = {name: measure(table, name) for name in CANDIDATES}
        peer = results["json-object"]
        for name, r in results.items():
            print(
                f"| {name} | {r['bytes']:.0f} | {r['zstd_bytes']:.1f} | {r['encode_us']:.1f} | {r['decode_us']:.1f} |"
            )
            for figure, unit in (("bytes", "B"), ("zstd_bytes", "B"), ("encode_us", "us"), ("decode_us", "us")):
                log.add(f"sli_sink.{kind}.{name}.{figure}", f"{args.rows} rows", r[figure], unit, peer=peer[figure])
    if args.kafka_events:
        through_kafka(args.kafka_events, log)
    log.write(args.figures_out)


if __name__ == "__main__":
    main()
