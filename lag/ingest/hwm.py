"""HWM rounds from a real cluster: every `offset_refresh_s`, ListOffsets(latest) for every partition of every
non-internal topic into the store, with each partition's placement (leader, replicas) kept for the page-cache
estimate. The same round reads topic ids (DescribeTopics) while a consumer-protocol assignment names an unknown one.
Kafka errors are caught here and turn the cluster unknown, never a verdict.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, TopicCollection

from lag.ingest.admin_clients import (
    RENEW_AFTER_FAILURES,
    AdminClients,
    gather,
    new_admin_client,
    request_timeout_s,
)
from lag.protocol import MetadataReading, Placement
from lag.store.access import LagWriter
from lag.store.freshness import SourceHealth
from pulse.kafka.offsets import read_offsets

_LOG = logging.getLogger(__name__)


def _placement(partition: Any) -> Placement:
    """A librdkafka `PartitionMetadata` as a placement; a full ISR shares the replicas' tuple."""
    replicas = tuple(partition.replicas)
    isr = replicas if partition.isrs == partition.replicas else tuple(partition.isrs)
    return Placement(partition.leader, replicas, isr)


def topic_id_bytes(topic_id: Any) -> bytes:
    """A confluent-kafka `Uuid` as the 16 bytes `__consumer_offsets` records carry."""
    msb, lsb = topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits()
    return int(msb).to_bytes(8, "big", signed=True) + int(lsb).to_bytes(8, "big", signed=True)


class TopicIdReader(Protocol):
    """Who asks the HWM rounds for topic ids (the `__consumer_offsets` reader, for consumer-protocol owners)."""

    def wants_topic_ids(self) -> bool: ...

    def resolve_topic_ids(self, names: dict[bytes, str]) -> None: ...


class HwmPoller:
    """One cluster's HWM rounds, on a consumer of its own (never subscribed, joined or committed)."""

    def __init__(self, cluster: str, client_config: dict[str, Any], service: LagWriter, health: SourceHealth) -> None:
        self.cluster = cluster
        self.client_config = dict(client_config)
        self.service = service
        self.health = health
        self.topic_ids_for: TopicIdReader | None = None
        """Given topic ids after a round while it wants them (set by the composition in `lag/assembly.py`)."""
        self.streams_inputs: Callable[[], Mapping[str, tuple[str, ...]]] | None = None
        """The cluster's streams groups and their input topics, whose log starts each round reads
        (lag/store/streams_starts.py); set by the composition when streams groups are described."""
        self._placements: dict[tuple[str, int], Placement] | None = None
        """Where each partition lived at the last successful round (replaced whole under the service lock, never
        changed in place); None before the first."""
        self._reader: Consumer | None = None
        """Metadata and high watermarks (ListOffsets through `offsets_for_times`, lag/ingest/admin_clients.py says
        why not the Admin API). Created on first use: configuring a source connects to nothing (Burrow's module
        contract)."""
        self._clients = AdminClients(lambda: new_admin_client(self.client_config))
        """This thread's admin client (topic ids only); the Admin API reader has its own."""
        self._topics: dict[str, int] = {}
        self._failed_rounds = 0
        self._metadata: MetadataReading | None = None
        self.failure: str | None = None
        """Why the last round read no metadata; None once one does (the status page reads it with `metadata`)."""

    def metadata(self) -> MetadataReading | None:
        """The last successful round's brokers and placements (replaced whole, never changed); None before it."""
        return self._metadata

    def placements(self) -> dict[tuple[str, int], Placement] | None:
        """Where each partition lived at the last successful round (read under the service lock); None before it."""
        return self._placements

    def close(self) -> None:
        """Closes the reader: left open, it went on reconnecting to a cluster that was gone, writing a line a second
        for the life of the process. Only once no round runs (one in progress owns the reader)."""
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()

    def poll_hwms(self) -> bool:
        """One ListOffsets(latest) round for every partition of every non-internal topic; False when it failed."""
        if self._reader is None:
            self._reader = self._new_reader()
        reader = self._reader
        reader.poll(0)  # serves librdkafka's log lines and errors (pulse/kafka_log.py), queued until polled
        started = time.monotonic()
        metadata: Any = None
        placements: dict[tuple[str, int], Placement] | None = None
        try:
            metadata = reader.list_topics(timeout=request_timeout_s(sum(self._topics.values())))
            listed = {n: t for n, t in metadata.topics.items() if not n.startswith("__") and t.error is None}
            topics = {name: len(t.partitions) for name, t in listed.items()}
            placements = {(name, p.id): _placement(p) for name, t in listed.items() for p in t.partitions.values()}
            request = [(t, p) for t, n in topics.items() for p in range(n)]
            results = read_offsets(reader, request, OFFSET_END, request_timeout_s(len(request)))
        except (KafkaException, TimeoutError, Exception) as exc:  # any failure means: this cluster is unknown now
            error = f"{type(exc).__name__}: {exc}"
            if placements is not None:  # the metadata came: a reading whose leaders are not known to answer
                self._publish(metadata, placements, started, error)
            else:
                self.failure = error[:300]
            self.health.mark_error(self.cluster, error)
            self._failed_rounds += 1
            if self._failed_rounds % RENEW_AFTER_FAILURES == 0:
                self._renew_clients()
            return False
        now = self.service.clock_ms()
        with self.service.locked() as store:
            for gone in set(self._topics) - set(topics):
                store.delete_topic(self.cluster, gone)
            for (topic, partition), offset in results.items():
                store.add_hwm(self.cluster, topic, partition, offset, now)
            self._placements = placements
        self._publish(metadata, placements, started)
        self._topics = topics
        self._failed_rounds = 0
        self.health.mark_ok(self.cluster)
        if self.topic_ids_for is not None and self.topic_ids_for.wants_topic_ids():
            self._read_topic_ids(self.topic_ids_for, listed)
        if self.streams_inputs is not None:
            self._read_streams_starts(reader, self.streams_inputs(), topics)
        return True

    def _read_streams_starts(
        self, reader: Consumer, inputs: Mapping[str, tuple[str, ...]], topics: dict[str, int]
    ) -> None:
        """ListOffsets(earliest) for the streams groups' input partitions, stored with the groups; a failed read
        keeps the previous round's (the HWMs, read just before, are what the verdicts need most)."""
        wanted = sorted({t for names in inputs.values() for t in names if t in topics})
        request = [(t, p) for t in wanted for p in range(topics[t])]
        try:
            starts = read_offsets(reader, request, OFFSET_BEGINNING, request_timeout_s(len(request)))
        except Exception as exc:  # the verdicts keep the previous starts
            _LOG.info("lag source %s: log starts not read (%s: %s)", self.cluster, type(exc).__name__, exc)
            return
        with self.service.locked() as store:
            store.streams_starts.replace(self.cluster, inputs, starts)

    def _publish(
        self, metadata: Any, placements: dict[tuple[str, int], Placement], started: float, error: str | None = None
    ) -> None:
        """The round's reading for the status page: its metadata, and whether every leader answered (`error`)."""
        brokers = {b.id: (str(b.host), int(b.port)) for b in metadata.brokers.values()}
        controller = metadata.controller_id if metadata.controller_id >= 0 else None
        elapsed_s = time.monotonic() - started
        now = self.service.clock_ms()
        self._metadata = MetadataReading(
            self.cluster, now, brokers, controller, placements, elapsed_s, error[:300] if error else None
        )
        self.failure = None

    def _read_topic_ids(self, asking: TopicIdReader, topics: Iterable[str]) -> None:
        """Read the topic ids that consumer-protocol assignments name and hand them over (it gives owners)."""
        names = sorted(topics)
        timeout = request_timeout_s(len(names))
        try:
            futures = self._clients.client.describe_topics(TopicCollection(names), request_timeout=timeout)
            self._clients.track(futures.values())
            ids = {name: info.topic_id for name, info in gather(futures, timeout + 5).items()}
        except Exception as exc:  # owners wait for the next round; the verdicts do not depend on them
            _LOG.info("lag source %s: topic ids not read (%s: %s)", self.cluster, type(exc).__name__, exc)
            return
        asking.resolve_topic_ids({topic_id_bytes(i): name for name, i in ids.items() if i is not None})

    def _new_reader(self) -> Consumer:
        """Never subscribes, joins or commits; reads uncommitted ends (HWMs, as Burrow does), not the LSO."""
        config = {
            **self.client_config,
            "group.id": f"kafka-pulse-lag-hwm-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
            "socket.timeout.ms": 5000,
        }
        return Consumer(config)

    def _renew_clients(self) -> None:
        """A fresh client after repeated failures: after a broker froze and came back, a client's connections or
        requests can stay wedged while a new client gets answers at once (seen with SIGSTOP/SIGCONT). The old one
        is kept until its pending requests end (admin_clients.py). The HWM consumer's reads are synchronous, so
        nothing of it is in flight here."""
        _LOG.info("lag source %s: %d HWM rounds failed; renewing its clients", self.cluster, self._failed_rounds)
        old, self._reader = self._reader, self._new_reader()
        if old is not None:
            old.close()
        self._clients.renew()
