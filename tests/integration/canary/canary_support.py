"""Shared plumbing of the canary integration tests: a fast canary on a cluster, and ways to read its state."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from canary.events import MemorySink
from canary.service import CanaryService
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CanaryConfig
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle

FAST = {
    "interval_s": 0.5,
    "latency_slo_s": 1.0,
    "loss_deadline_s": 5.0,
    "availability_window_s": 6.0,
    "connection_check_interval_s": 0.5,
    "connection_check_timeout_s": 0.5,
    "metadata_refresh_s": 0.5,
    "reconcile_interval_s": 1.0,
}
"""Short intervals so faults show within seconds; the "within 3 probe intervals" bound is counted in
these 0.5 s probe rounds."""


@contextmanager
def running_canary(kafka: KafkaHandle, **overrides: Any) -> Iterator[tuple[CanaryService, MemorySink]]:
    """A canary on its own topic of `kafka`, its results kept in memory; stopped however the test ends."""
    settings = {**FAST, "topic": f"canary-{uuid.uuid4().hex[:8]}", **overrides}
    sink = MemorySink()
    service = CanaryService(dev_cluster_config(kafka.cluster), CanaryConfig(**settings), [sink])
    service.start()
    try:
        yield service, sink
    finally:
        service.stop()


def await_healthy(service: CanaryService, brokers: set[int], timeout_s: float = 90.0) -> None:
    """Every broker leads a partition, answers its check and has availability 1.0."""

    def state() -> tuple[dict[int, float | None], dict[int, int], dict[int, bool]]:
        return service.availability(), service.view.partitions_led(), service.broker_up()

    def healthy(seen: tuple[dict[int, float | None], dict[int, int], dict[int, bool]]) -> bool:
        availability, led, up = seen
        return all(availability.get(b) == 1.0 and led.get(b, 0) >= 1 and up.get(b) for b in brokers)

    poll(state, healthy, timeout_s, f"availability 1.0, a led partition and a passing check for brokers {brokers}")


def sample(service: CanaryService, name: str, **labels: str) -> float:
    """Sum of the samples of metric `name` whose labels include `labels` (0 when there are none)."""
    total = 0.0
    for family in service.registry.collect():
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total
