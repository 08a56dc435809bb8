"""Mirror mode (chapter 10's mirror canary; Pinterest's Shallow Mirror and Kuaishou's trillion-scale Kafka write-ups):
probes are produced on the source cluster's monitor topic and read back from MirrorMaker's copy on the target cluster.

The core canary's producer, consumer, tracker and ledger do the probing; this package adds what only a mirror has:
replication latency (target receive time minus source send time, one process so one monotonic clock) and loss per
source partition, the replication lag (age of the oldest acknowledged probe not yet on the target), and the
`kafka_pulse_canary_mirror_*` families (docs/metrics.md, "Canary mirror").

The package holds one part per file: `ledger.py` (the replication lag), `metrics.py` (the families) and
`service.py` (the two loops and `configure_mirror`).
"""

from canary.mirror.ledger import MirrorLag, MirrorLedger
from canary.mirror.metrics import PREFIX, REPLICATION_BUCKETS_S, MirrorMetrics, MirrorSnapshot
from canary.mirror.service import MirrorCanary, configure_mirror

__all__ = [
    "PREFIX",
    "REPLICATION_BUCKETS_S",
    "MirrorCanary",
    "MirrorLag",
    "MirrorLedger",
    "MirrorMetrics",
    "MirrorSnapshot",
    "configure_mirror",
]
