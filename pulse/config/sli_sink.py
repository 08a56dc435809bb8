"""Config section `sli_sink:`: SLI events published to Kafka beside the Parquet logs (pulse/sli_sink/;
docs/sli-log.md, "Kafka sink"). Off by default: Parquet stays the embedded default."""

from pydantic import Field

from pulse.config.types import ConfigRelativeDir, Name, PositiveSeconds, Section


class SliSinkConfig(Section):
    """Where the canary's and the lag evaluator's SLI rows go on Kafka, and how they wait while it is away."""

    enabled: bool = False
    """Publish every SLI row (canary probes, lag evaluation cycles) to Kafka too; the Parquet logs are unchanged."""
    cluster: Name | None = None
    """The cluster in `clusters:` to publish to: a monitoring cluster of its own, or the monitored one (then its
    outages delay the SLI events of that outage, docs/sli-log.md); None means the only configured cluster."""
    topic_prefix: str = Field(default="kafka-pulse-sli-", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    """Topics are this plus the log's name: `<prefix>canary`, `<prefix>lag-groups`, `<prefix>lag-partitions`,
    `<prefix>audit-broker` (with `audit`).
    Create them beforehand (kafka-pulse does not): their partitions, replication and retention are yours."""
    spool_dir: ConfigRelativeDir | None = None
    """Where events wait while the cluster is unreachable, one subdirectory per command (`run`, `canary`, `lag`:
    processes sharing the directory never share a spool); default `<state dir>/sli-spool`. A relative path is
    relative to the config file."""
    spool_max_bytes: int = Field(default=64 << 20, ge=1 << 20, le=1 << 30)
    """Bound of each component's spool; past it the oldest events are dropped (and counted, `spool_full`).
    About 520 bytes per canary event: 64 MiB holds roughly 130,000 events."""
    queue_size: int = Field(default=100_000, ge=1, le=10_000_000)
    """Rows handed over in memory at most before they reach the spool; past it rows are dropped and counted
    (`queue_full`), the probe loop never waits."""
    delivery_timeout_s: PositiveSeconds = Field(default=30.0, le=600)
    """librdkafka's `message.timeout.ms`: a delivery not acknowledged by then fails, and its events stay spooled."""
    retry_after_s: PositiveSeconds = Field(default=10.0, le=600)
    """After a failed delivery, the next attempt waits this long."""
