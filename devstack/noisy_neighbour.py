"""A noisy-neighbour workload on one dev broker, with Kafka's own perf tools: a large backlog on a topic whose
partitions that broker leads, a consumer group reading it from the start far behind (a broker quota keeps it there),
and producers writing to another topic that broker leads: the producers a disk-bound reader hurts (the Kuaishou
seed). A trickle keeps the backlog topic written, as a real one is, so the group's time lag stays measurable.

Started as child processes and stopped by PID (perf_clients.py); nothing here decides what is noisy: that is
lag/diagnose/noisy_neighbour.py's job on what the cluster shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from devstack.perf_clients import PerfClient, start_consumer, start_producer
from devstack.runtime import KafkaRuntime
from devstack.traffic import COMMIT_INTERVAL_MS, PRODUCE_DURATION_S, set_consumer_quota
from pulse.errors import ClusterError, ProcessFailed


@dataclass(frozen=True)
class NoisyPlan:
    """Sizes and rates of the workload; the defaults fill 64 MB and read it back at 256 kB/s per broker."""

    broker: int
    """The broker X that leads every partition of both topics."""
    prefix: str = "noisy"
    """Names: `<prefix>-backlog` and `<prefix>-victim` topics, the `<prefix>-reader` group (also its client id, which
    the quota is set on) and the producers' client ids."""
    partitions: int = 3
    backlog_records: int = 65_536
    record_size: int = 1024
    reader_bytes_per_s: int = 256 * 1024
    """The reader's `consumer_byte_rate` quota on each broker: far below what is there, so it stays behind."""
    victim_records_per_s: int = 100
    trickle_records_per_s: int = 20
    fill_timeout_s: float = 300.0

    @property
    def backlog_bytes(self) -> int:
        return self.backlog_records * self.record_size

    @property
    def backlog_topic(self) -> str:
        return f"{self.prefix}-backlog"

    @property
    def victim_topic(self) -> str:
        return f"{self.prefix}-victim"

    @property
    def reader_group(self) -> str:
        return f"{self.prefix}-reader"


def led_by(broker: int, brokers: list[int], partitions: int) -> list[list[int]]:
    """A replica assignment whose preferred leader (first replica) is `broker` for every partition, the other
    replicas rotating over the rest of the brokers (pure)."""
    if broker not in brokers:
        raise ClusterError(f"noisy neighbour: broker {broker} is not in the cluster (brokers {sorted(brokers)})")
    others = [b for b in sorted(brokers) if b != broker]
    replicas = min(3, len(brokers)) - 1
    return [[broker, *(others[(p + i) % len(others)] for i in range(replicas))] for p in range(partitions)]


@dataclass
class NoisyNeighbourWorkload:
    """The workload's clients; `start` creates the topics, fills the backlog (waiting for it), sets the quota and
    starts the reader, the trickle and the victim producer; `stop` stops every client it started (twice is safe)."""

    config_runtime: KafkaRuntime
    """The classpath holding ConfigCommand (`ensure_config_command`)."""
    tools_runtime: KafkaRuntime
    workdir: Path
    bootstrap_servers: str
    plan: NoisyPlan
    clients: list[PerfClient] = field(default_factory=list)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._create_topics()
            with ThreadPoolExecutor(1, thread_name_prefix="noisy-quota") as pool:  # two JVMs side by side
                quota = pool.submit(
                    set_consumer_quota,
                    self.config_runtime,
                    self.bootstrap_servers,
                    self.plan.reader_group,
                    self.plan.reader_bytes_per_s,
                    "noisy neighbour",
                )
                self._fill_backlog()
                quota.result()  # in place before the reader starts, so it never runs ahead
            self._start_clients()
        except BaseException:
            self.stop()
            raise

    def _create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        brokers = list(admin.list_topics(timeout=30).brokers)
        assignment = led_by(self.plan.broker, brokers, self.plan.partitions)
        futures = admin.create_topics(
            [
                NewTopic(t, len(assignment), replica_assignment=assignment)
                for t in (self.plan.backlog_topic, self.plan.victim_topic)
            ],
            request_timeout=30,
        )
        for topic, future in futures.items():
            try:
                future.result(timeout=60)
            except Exception as exc:  # KafkaException; a kept topic from an earlier run is fine
                if "TOPIC_ALREADY_EXISTS" not in str(exc) and "already exists" not in str(exc).lower():
                    raise ClusterError(f"noisy neighbour: topic {topic!r} not created: {exc}") from exc

    def _fill_backlog(self) -> None:
        """ProducerPerformance as fast as it can until the backlog is written; waits for it to exit."""
        p = self.plan
        filler = start_producer(
            self.tools_runtime,
            self.workdir,
            self.bootstrap_servers,
            p.backlog_topic,
            f"{p.prefix}-filler",
            throughput=-1,
            record_size=p.record_size,
            records=p.backlog_records,
            settings={"acks": "1", "linger.ms": "50", "batch.size": str(256 * 1024), "compression.type": "none"},
        )
        deadline = time.monotonic() + p.fill_timeout_s
        try:
            while filler.running():
                if time.monotonic() > deadline:
                    raise ProcessFailed(
                        f"noisy neighbour: {p.backlog_records} records not written in {p.fill_timeout_s:.0f} s "
                        f"(log: {filler.log_path})"
                    )
                time.sleep(0.2)
        finally:
            filler.stop()

    def _start_clients(self) -> None:
        """The reader, the trickle and the victim producer, launched side by side (each waits for its JVM); every
        one that started is kept for `stop` even when another failed."""
        p = self.plan
        commits = {"auto.commit.interval.ms": str(COMMIT_INTERVAL_MS)}
        launches: list[Callable[[], PerfClient]] = [
            partial(
                start_consumer,
                self.tools_runtime,
                self.workdir,
                self.bootstrap_servers,
                p.backlog_topic,
                p.reader_group,
                p.reader_group,
                idle_timeout_s=PRODUCE_DURATION_S,
                settings=commits,
            ),
        ]
        for topic, client, rate in (
            (p.backlog_topic, f"{p.prefix}-trickle", p.trickle_records_per_s),
            (p.victim_topic, f"{p.prefix}-victim-producer", p.victim_records_per_s),
        ):
            launches.append(
                partial(
                    start_producer,
                    self.tools_runtime,
                    self.workdir,
                    self.bootstrap_servers,
                    topic,
                    client,
                    throughput=rate,
                    duration_s=PRODUCE_DURATION_S,
                    record_size=p.record_size,
                    settings={"acks": "all"},
                )
            )
        with ThreadPoolExecutor(len(launches), thread_name_prefix="noisy-client") as pool:
            futures = [pool.submit(launch) for launch in launches]
        self.clients += [f.result() for f in futures if f.exception() is None]
        failures = [error for f in futures if (error := f.exception()) is not None]
        if failures:
            raise failures[0]

    @property
    def pids(self) -> dict[str, int]:
        return {client.name: client.pid for client in self.clients}

    def stop(self) -> None:
        while self.clients:
            self.clients.pop().stop()
