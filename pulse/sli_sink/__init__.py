"""SLI events on Kafka (docs/sli-log.md, "Kafka sink"): the canary's and the lag evaluator's rows published to a
topic per log on a configured cluster, never blocking the producing side, spooled on disk while the cluster is
away. One module per stage, read in this order:

    encode.py   rows -> records (JSON values, schema and identity headers) and spool lines (pure)
    queue.py    `HandOff` (bounded, in memory) and `EventSpool` (bounded, on disk: pulse/alerts/spool.py)
    deliver.py  `KafkaDelivery`: an idempotent producer, one acknowledged round at a time
    sink.py     `SliSink`: the thread that moves rows through the stages, and its counters
    metrics.py  `SliSinkCollector`: `kafka_pulse_sli_sink_*`

In short:

    sink = SliSink(spool_dir, KafkaDelivery(client_config(cluster), "kafka-pulse-sli-", 30.0)).start()
    sink.offer(CANARY_STREAM, table)     # from the probe loop: a lock and an append
    sink.stop()
"""

from pulse.sli_sink.deliver import PRODUCER_SETTINGS, Delivery, KafkaDelivery, Outcome
from pulse.sli_sink.encode import (
    HEADER_SCHEMA,
    HEADER_SEQ,
    HEADER_SOURCE,
    HEADER_VERSION,
    SpooledEvent,
    Stream,
    decode_rows,
    encode_row,
    events_of,
    header_map,
)
from pulse.sli_sink.metrics import SliSinkCollector
from pulse.sli_sink.queue import EventSpool, HandOff
from pulse.sli_sink.sink import DROP_REASONS, SliPublisher, SliSink, SliSinkStats, SpoolInUse

__all__ = [
    "DROP_REASONS",
    "HEADER_SCHEMA",
    "HEADER_SEQ",
    "HEADER_SOURCE",
    "HEADER_VERSION",
    "PRODUCER_SETTINGS",
    "Delivery",
    "EventSpool",
    "HandOff",
    "KafkaDelivery",
    "Outcome",
    "SliPublisher",
    "SliSink",
    "SliSinkCollector",
    "SliSinkStats",
    "SpoolInUse",
    "SpooledEvent",
    "Stream",
    "decode_rows",
    "encode_row",
    "events_of",
    "header_map",
]
