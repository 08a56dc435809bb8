"""The in-process JMX transport scraping a real broker many times keeps the interpreter's memory flat: JPype1 up to
1.7.1 leaks a block for every java.lang.Long or Double it hands to Python (jpype-project/jpype#1379), which the soak
saw as `run` growing 6.8 MB an hour (docs/benchmarks.md, "Soak")."""

from __future__ import annotations

import gc
import sys

from collectors.catalogue import JVM_BEANS, scrape_plan
from collectors.transport import JpypeTransport
from kafka_pulse.clusters import dev_cluster_config
from tests.fixtures.kafka import KafkaHandle

READS = 30
"""Enough to tell a leak from noise: unboxed, the growth after the warm-up was 3-5 blocks over 10-30 reads (12 over
200); boxed, every read leaves one block per number (over 400), and a leak of one block a read already fails."""


def test_scraping_a_broker_repeatedly_leaks_no_memory(kafka: KafkaHandle) -> None:
    config = dev_cluster_config(kafka.cluster)
    assert config.jmx is not None
    transport = JpypeTransport(config.jmx.brokers[0], 20)
    queries = [*scrape_plan(), *JVM_BEANS]
    try:
        for _ in range(20):  # warm: JPype's class wrappers and caches are made once
            readings = transport.read(queries)
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(READS):
            readings = transport.read(queries)
        gc.collect()
        grown = sys.getallocatedblocks() - before
    finally:
        transport.close()
    numbers = [r for r in readings if isinstance(r.value, float)]
    heap = {r.key: r.value for r in readings if r.attribute == "HeapMemoryUsage"}
    assert len(numbers) > 50, "the scrape read the broker's numbers"
    assert set(heap) == {"committed", "init", "max", "used"} and all(isinstance(v, float) for v in heap.values())
    # Boxed, every read of these numbers left one block each behind: READS * len(numbers), thousands.
    assert grown < READS, f"{grown} blocks more after {READS} reads of {len(numbers)} numbers"
