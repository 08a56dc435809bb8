"""Config section `canary:`: the synthetic producer/consumer, its SLI log and mirror mode."""

from pathlib import Path
from typing import Self

from pydantic import Field, model_validator

from pulse.config.types import HostPort, PositiveSeconds, Seconds, Section, TopicName
from pulse.envsubst import config_problem


class SliLogConfig(Section):
    """Where and how the canary writes one Parquet row per settled probe (schema: docs/sli-log.md)."""

    enabled: bool = True
    """Write the SLI log; the SLO engine's `events` sources read it."""
    dir: Path | None = None
    """The log's root (`date=YYYY-MM-DD/part-*.parquet` below it); None means `<state dir>/sli/canary`.
    Relative paths are relative to the process's working directory."""
    flush_interval_s: PositiveSeconds = Field(default=60.0, le=60)
    """Rows reach disk at least this often (and on stop); at most a minute, so the SLO engine is never further
    behind than that."""
    max_bytes: int = Field(default=1 << 30, ge=1 << 20, le=1 << 40)
    """The log's size bound: the oldest files are removed first once it is exceeded (at least 1 MiB)."""
    queue_size: int = Field(default=100_000, ge=1, le=10_000_000)
    """Rows waiting for the writer at most; beyond it rows are dropped and counted, probes never wait."""


class CanaryMirrorConfig(Section):
    """Mirror mode: probes produced on `source`, read back from their MirrorMaker copy on
    `target`, for replication latency and loss per source partition."""

    enabled: bool = False
    """Measure MirrorMaker replication too; needs `target`."""
    source: str | None = None
    """The cluster probes are produced on; None means `canary.cluster` (or the only configured cluster)."""
    target: str | None = None
    """The cluster the mirrored topic is read on; required when enabled."""
    topic: TopicName = "pulse-canary-mirror"
    """The monitor topic on the source; MirrorMaker must replicate it. Not `__`-prefixed: MirrorMaker 2's default
    `topics.exclude` skips such names."""
    target_topic: TopicName | None = None
    """Its copy's name on the target; None means `<source_alias>.<topic>` (MM2's DefaultReplicationPolicy)."""
    source_alias: str | None = None
    """The source's alias in MirrorMaker's config; None means the source cluster's name here."""
    loss_deadline_s: PositiveSeconds = 60.0
    """A probe acknowledged on the source and not read on the target within this long is lost."""

    @model_validator(mode="after")
    def _target_when_enabled(self) -> Self:
        if self.enabled and self.target is None:
            raise config_problem("required when mirror mode is enabled: the cluster MirrorMaker copies to", ("target",))
        if self.target is not None and self.target == self.source:
            raise config_problem(f"{self.target!r} is also the source; mirror mode reads another cluster", ("target",))
        return self

    def mirrored_topic(self, source_name: str) -> str:
        """The topic read on the target when the source cluster is called `source_name` here."""
        return self.target_topic or f"{self.source_alias or source_name}.{self.topic}"


class CanaryConfig(Section):
    """Synthetic producer/consumer (canary/): probes every partition of a monitor topic each interval."""

    enabled: bool = True
    """Run the canary; `run` leaves it out and `kafka-pulse canary` refuses to start when false."""
    cluster: str | None = None
    """Which configured cluster to probe; None means the only one (or the local dev cluster)."""
    topic: TopicName = "__pulse_canary"
    """The monitor topic probes are written to and read from; the canary creates and places it."""
    interval_s: PositiveSeconds = 1.0
    """One probe per partition per interval."""
    client_rack: str | None = None
    """The canary's own rack (`client.rack`), so probes can be labelled same-rack or cross-rack."""
    replication_factor: int | None = Field(default=None, ge=1)
    """Of the monitor topic when the canary creates it; None means min(3, brokers)."""
    min_insync_replicas: int | None = Field(default=None, ge=1)
    """None means replication_factor - 1 (at least 1), so one broker down still accepts acks=all probes."""
    partitions_per_broker: float = Field(default=1.0, gt=0, le=100)
    """The topic keeps at least ceil(brokers x this) partitions."""
    manage_topic: bool = True
    """Create, extend and re-balance the monitor topic; false only reports what is wrong (metric and log)."""
    reconcile_interval_s: PositiveSeconds = 60.0
    """How often the topic's placement is checked against the live brokers."""
    min_change_interval_s: Seconds = 600.0
    """At least this long between two placement changes, so a flapping broker cannot make the canary thrash
    the cluster with reassignments (Strimzi canary #221, #28)."""
    latency_slo_s: PositiveSeconds = 2.0
    """A probe not acknowledged within this is bad (`produce_ok` false) and counts against availability as soon
    as it is this old. It is also the broker's ack timeout for the probe (`request.timeout.ms`)."""
    delivery_timeout_s: PositiveSeconds = 30.0
    """How long the client keeps trying a probe before giving it up (librdkafka's `message.timeout.ms`). Longer
    than a broker fence (`broker.session.timeout.ms`, 9 s by default): a probe given up in flight makes the
    idempotent producer bump its epoch and re-send what it was still retrying, which writes duplicates (counted)."""
    loss_deadline_s: PositiveSeconds = 30.0
    """An acknowledged probe not read back within this long after its acknowledgement is lost."""
    availability_window_s: PositiveSeconds = 60.0
    """The sliding window of the per-broker availability gauges."""
    connection_check_interval_s: PositiveSeconds = 10.0
    """How often each broker is asked for metadata on its own connection."""
    connection_check_timeout_s: PositiveSeconds = 2.0
    """Limit of one broker's metadata answer; a slower broker's connection check fails."""
    metadata_refresh_s: PositiveSeconds = 2.0
    """How often partition leaders and in-sync replicas are re-read, to attribute probes to brokers."""
    log_check_interval_s: PositiveSeconds = 10.0
    """How often each partition's log start and end offsets are compared with the offsets probes were acknowledged
    at: an acknowledged offset no longer in the log was truncated (or deleted before it was read)."""
    commit_group: str | None = None
    """Consumer group whose offset is committed each interval to probe the group coordinator; None means
    `<topic>-<instance id>`, one group per canary instance."""
    closest_replica_probe: bool = False
    """Also read with `client.rack` set, from the closest replica (KIP-392): needs `client_rack` and brokers
    with `replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector`."""
    listen: HostPort | None = None
    """Where `kafka-pulse canary` serves /metrics; None means `http.listen`."""
    sli_log: SliLogConfig = SliLogConfig()
    """The Parquet SLI event log."""
    mirror: CanaryMirrorConfig = CanaryMirrorConfig()
    """Mirror mode across two clusters."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        rf, min_isr = self.replication_factor, self.min_insync_replicas
        if rf is not None and min_isr is not None and min_isr > rf:
            raise config_problem(
                f"{min_isr} is more than replication_factor {rf}: no acks=all probe could ever succeed",
                ("min_insync_replicas",),
            )
        if self.loss_deadline_s < self.latency_slo_s:
            raise config_problem(
                f"{self.loss_deadline_s:g} s is shorter than latency_slo_s {self.latency_slo_s:g} s: a probe "
                "would count as lost before a read-back as slow as the produce SLO allows",
                ("loss_deadline_s",),
            )
        if self.delivery_timeout_s < self.latency_slo_s:
            raise config_problem(
                f"{self.delivery_timeout_s:g} s is shorter than latency_slo_s {self.latency_slo_s:g} s: probes "
                "would be given up before they could be judged",
                ("delivery_timeout_s",),
            )
        if self.availability_window_s < self.interval_s:
            raise config_problem(
                f"{self.availability_window_s:g} s is shorter than interval_s {self.interval_s:g} s: the window "
                "would often hold no probe at all",
                ("availability_window_s",),
            )
        if self.closest_replica_probe and self.client_rack is None:
            raise config_problem(
                "closest_replica_probe needs client_rack: the broker picks the replica in the client's rack",
                ("client_rack",),
            )
        return self
