"""The soak's load, as a child process of bench/soak.py: a librdkafka abort in a client that a fault drives into
an assertion (seen once: `rd_kafka_enq_once_del_source_return` on an admin request while a broker was SIGSTOPped)
then ends only this child, which the soak restarts and counts, never the soak itself.

    python3 bench/soak_traffic.py BOOTSTRAP TOPICS PARTITIONS GROUPS
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devstack.populate import commit_groups
from devstack.topology import DataShape
from pulse.admin_requests import GROUP_REQUEST_TIMEOUT_S
from pulse.lifecycle import Periodic


class Traffic:
    """A producer writing one record to every partition every 5 s, and every group committing its topic's end
    offsets every 10 s once this process's deliveries have shown every end: lag stays near 0, so a verdict worse
    than OK means a fault, never the load."""

    def __init__(self, bootstrap: str, shape: DataShape) -> None:
        self.shape = shape
        self.partitions = [(t, p) for t in shape.topic_names() for p in range(shape.partitions_per_topic)]
        self.ends: dict[tuple[str, int], int] = {}
        """Each partition's end as this process's deliveries show it; a restarted child knows none at first."""
        self._lock = threading.Lock()
        settings: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap, "log_level": 3}
        self.producer = Producer(settings | {"acks": "all", "enable.idempotence": True})
        self.admin = AdminClient(settings | {"log_level": 0})
        self.loops = [
            Periodic("soak-produce", 5.0, self._produce),
            Periodic("soak-commit", 10.0, self._commit, first_delay_s=10.0),
        ]

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            key = (msg.topic(), msg.partition())
            with self._lock:
                self.ends[key] = max(self.ends.get(key, 0), msg.offset() + 1)

    def _produce(self) -> None:
        for topic, partition in self.partitions:
            self.producer.produce(topic, b"soak", partition=partition, on_delivery=self._delivered)
        self.producer.flush(4.0)

    def _commit(self) -> None:
        topics = dict(self.shape.group_topics())
        names = list(topics)
        with self._lock:
            ends = dict(self.ends)
        if len(ends) < len(self.partitions):
            return  # not every end known yet (just restarted): committing a guess would move groups backwards
        commit_groups(self.admin, self.shape, lambda g, p: ends[(topics[names[g]], p)], GROUP_REQUEST_TIMEOUT_S)

    def start(self) -> None:
        for loop in self.loops:
            loop.start()

    def stop(self) -> None:
        for loop in self.loops:
            loop.stop(timeout_s=60)
        self.producer.flush(10.0)


def main() -> None:
    bootstrap, topics, partitions, groups = sys.argv[1], *map(int, sys.argv[2:5])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    traffic = Traffic(bootstrap, DataShape(topics, partitions, groups))
    traffic.start()
    stop.wait()
    traffic.stop()


if __name__ == "__main__":
    main()
