"""Demo traffic on a dev cluster with Kafka's own client tools: one steady producer and three consumer groups, one
keeping up, one too slow (a broker-side consumer quota throttles it) and one that stops (it reads a fixed number of
records and exits), so the lag evaluator has an OK, a lagging and a stopped group to show.

Started as child processes and stopped by PID (devstack/perf_clients.py launches them); the quota is set with
Kafka's own ConfigCommand, as `kafka-configs.sh` would (the broker's core jar before 4.4, kafka-tools from 4.4).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from devstack.perf_clients import PerfClient, start_consumer, start_producer
from devstack.runtime import KafkaRuntime, config_command_main
from pulse.errors import ClusterError, ProcessFailed

DEMO_TOPIC = "demo-orders"
PARTITIONS = 6
KEEPS_UP = "demo-keeps-up"
TOO_SLOW = "demo-too-slow"
STOPS = "demo-stops"
DEMO_GROUPS = (KEEPS_UP, TOO_SLOW, STOPS)
"""The three groups, by what they do; their client ids are the same names."""

COMMIT_INTERVAL_MS = 2000
"""Auto-commit every 2 s (the client default is 5 s): the evaluator's window fills within seconds, not minutes."""
PRODUCE_DURATION_S = 7 * 86_400.0
"""The producer runs until stopped (a week at most)."""


@dataclass(frozen=True)
class TrafficPlan:
    """Rates of the demo's traffic; the slow group's quota is a fraction of what the producer writes."""

    records_per_s: int = 100
    record_size: int = 100
    slow_bytes_per_s_per_broker: int = 1024
    """The too-slow group's `consumer_byte_rate` quota on each broker: with 3 brokers about a third of the 10 kB/s
    written, so its lag grows steadily."""
    stops_after_s: float = 20.0
    """The stopping group reads about this many seconds of records, commits and exits."""

    @property
    def stops_after_records(self) -> int:
        return max(1, int(self.records_per_s * self.stops_after_s))


def quota_command(runtime: KafkaRuntime, bootstrap_servers: str, client_id: str, bytes_per_s: int) -> list[str]:
    """`kafka-configs.sh --alter --add-config consumer_byte_rate=N --entity-type clients --entity-name ID` (pure);
    `runtime` is the classpath `ensure_config_command` gives."""
    main = config_command_main(runtime.version)
    return [
        *("java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", runtime.classpath, main),
        *("--bootstrap-server", bootstrap_servers),
        *("--alter", "--add-config", f"consumer_byte_rate={bytes_per_s}"),
        *("--entity-type", "clients", "--entity-name", client_id),
    ]


def set_consumer_quota(
    runtime: KafkaRuntime, bootstrap_servers: str, client_id: str, bytes_per_s: int, who: str
) -> None:
    """Run `quota_command`; ProcessFailed naming `who` and the tool's last lines when it fails."""
    argv = quota_command(runtime, bootstrap_servers, client_id, bytes_per_s)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ProcessFailed(f"{who}: quota for client {client_id!r} not set: {' | '.join(tail)}")


@dataclass
class DemoTraffic:
    """The producer and the three consumers; `start` creates the topic and the quota first, `stop` stops every
    client it started, in reverse order (safe to call twice, and after a failed start)."""

    config_runtime: KafkaRuntime
    """The classpath holding ConfigCommand (`ensure_config_command`)."""
    tools_runtime: KafkaRuntime
    """The client-tools classpath (ProducerPerformance, ConsumerPerformance)."""
    workdir: Path
    bootstrap_servers: str
    replication: int = 3
    """The topic's replication factor: the dev cluster's broker count (1 or 3)."""
    plan: TrafficPlan = TrafficPlan()
    clients: list[PerfClient] = field(default_factory=list)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._create_topic()
        self._set_quota(TOO_SLOW, self.plan.slow_bytes_per_s_per_broker)
        p = self.plan
        try:
            self.clients.append(
                start_producer(
                    self.tools_runtime,
                    self.workdir,
                    self.bootstrap_servers,
                    DEMO_TOPIC,
                    "demo-producer",
                    throughput=p.records_per_s,
                    duration_s=PRODUCE_DURATION_S,
                    record_size=p.record_size,
                    settings={"acks": "all", "linger.ms": "20"},
                )
            )
            commits = {"auto.commit.interval.ms": str(COMMIT_INTERVAL_MS)}
            for group, records in ((KEEPS_UP, 10**12), (TOO_SLOW, 10**12), (STOPS, p.stops_after_records)):
                self.clients.append(
                    start_consumer(
                        self.tools_runtime,
                        self.workdir,
                        self.bootstrap_servers,
                        DEMO_TOPIC,
                        group,
                        group,
                        idle_timeout_s=PRODUCE_DURATION_S,
                        records=records,
                        settings=commits,
                    )
                )
        except BaseException:
            self.stop()
            raise

    def _create_topic(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        futures = admin.create_topics([NewTopic(DEMO_TOPIC, PARTITIONS, self.replication)], request_timeout=30)
        try:
            futures[DEMO_TOPIC].result(timeout=60)
        except Exception as exc:  # KafkaException; an existing topic (a demo restarted on kept data) is fine
            if "already exists" not in str(exc).lower() and "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise ClusterError(
                    f"demo traffic: topic {DEMO_TOPIC!r} not created on {self.bootstrap_servers}: {exc}"
                ) from exc

    def _set_quota(self, client_id: str, bytes_per_s: int) -> None:
        set_consumer_quota(self.config_runtime, self.bootstrap_servers, client_id, bytes_per_s, "demo traffic")

    @property
    def pids(self) -> dict[str, int]:
        return {client.name: client.pid for client in self.clients}

    def stop(self) -> None:
        while self.clients:
            self.clients.pop().stop()
