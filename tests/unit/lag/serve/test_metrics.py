"""The lag evaluator's /metrics families (lag/serve/metrics.py): per group and per partition by default; with
`lag.metrics_granularity: group` only the per-group ones, whatever the number of partitions."""

from __future__ import annotations

from typing import Literal

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from lag.serve.metrics import RELEASE_FROM_ROWS, LagCollector
from lag.service import LagService
from pulse.config import LagConfig
from pulse.http.exposition import encode

NOW = 1_700_000_000_000
PER_PARTITION = (
    "burrow_kafka_consumer_partition_lag", "burrow_kafka_consumer_current_offset", "kafka_consumergroup_group_lag",
)  # fmt: skip
PER_GROUP = ("burrow_kafka_consumer_lag_total", "burrow_kafka_consumer_status", "kafka_consumergroup_group_max_lag")


def scrape(granularity: Literal["partition", "group"]) -> str:
    service = LagService(LagConfig(mode="burrow", intervals=3, min_distance_s=1), clock_ms=lambda: NOW)
    with service.locked() as store:
        for partition in range(4):
            store.add_hwm("local", "t", partition, 100, NOW - 30_000)
            for i in range(3):
                store.add_commit("local", "g", "t", partition, 10 + i, NOW - 30_000 + i * 10_000, NOW)
    registry = CollectorRegistry()
    registry.register(LagCollector(service, granularity))
    return encode(registry, generate_latest).decode()


@pytest.mark.parametrize("granularity", ["partition", "group"])
def test_granularity_decides_the_per_partition_families(granularity: Literal["partition", "group"]) -> None:
    text = scrape(granularity)
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    for family in PER_GROUP:
        assert sum(1 for line in samples if line.startswith(family + "{")) == 1, family
    for family in PER_PARTITION:
        count = sum(1 for line in samples if line.startswith(family + "{"))
        assert count == (4 if granularity == "partition" else 0), (family, count)
    assert 'burrow_kafka_consumer_lag_total{cluster="local",consumer_group="g"} 352.0' in text  # 4 x (100 - 12)


def test_the_config_key_defaults_to_partition_and_refuses_anything_else() -> None:
    assert LagConfig().metrics_granularity == "partition"
    assert LagConfig.model_validate({"metrics_granularity": "group"}).metrics_granularity == "group"
    with pytest.raises(ValueError, match="metrics_granularity"):
        LagConfig.model_validate({"metrics_granularity": "topic"})


def service_of(groups: int) -> LagService:
    """`groups` groups of one partition, each with one commit."""
    service = LagService(LagConfig(mode="burrow", intervals=3, min_distance_s=1), clock_ms=lambda: NOW)
    with service.locked() as store:
        store.add_hwm("local", "t", 0, 100, NOW - 30_000)
        for g in range(groups):
            store.add_commit("local", f"g{g:06d}", "t", 0, 50, NOW - 30_000, NOW)
    return service


def test_a_large_scrape_hands_the_freed_heap_back_once_its_text_is_sent() -> None:
    """#15: a running service kept the scrape's freed arrays resident (330 against 298 B a group of one partition
    at 1,000,000, docs/benchmarks.md); the release comes after the last piece, also when the scraper goes away
    mid-body, and never for a small scrape (a trim costs 1-2 ms)."""
    sent = 0
    released: list[int] = []

    def release() -> None:
        released.append(sent)

    large = LagCollector(service_of(RELEASE_FROM_ROWS // 2), "group", release)
    for _piece in large.render(generate_latest):
        sent += 1
    assert sent > 1
    assert released == [sent]

    pieces = iter(large.render(generate_latest))
    next(pieces)
    assert released == [sent]
    pieces.close()  # type: ignore[attr-defined]  # a generator: the listener drops it when the client is gone
    assert released == [sent, sent]

    small = LagCollector(service_of(RELEASE_FROM_ROWS // 2 - 1), "group", release)
    assert b"".join(small.render(generate_latest))
    assert released == [sent, sent]
