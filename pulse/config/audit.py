"""Config section `audit:`: the broker-side data-flow audit in `kafka-pulse run` (audit/; docs/audit.md): which
cluster, topics and groups, how often, how long a minute may wait, and where its rows go (a Parquet log the SLO
engine's `audit` sources read, and the SLI sink's topic `<prefix>audit-broker` when `sli_sink` is enabled)."""

from pathlib import Path
from typing import Annotated, Self

from pydantic import AfterValidator, Field, field_validator, model_validator

from pulse.config.types import Name, PositiveSeconds, Seconds, Section, TopicName
from pulse.envsubst import config_problem


def _check_group(group: str) -> str:
    if any(ord(c) < 0x20 or c == "\x7f" for c in group):
        raise ValueError(f"{group!r} holds a control character; a consumer group id is printable text")
    return group


GroupId = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_check_group)]
"""A consumer group id: 1-255 printable characters (Kafka allows more; rows, labels and logs carry it)."""


def _unique(items: list[str], noun: str) -> list[str]:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item in first:
            raise config_problem(f"duplicate {noun} {item!r} (also {noun}s[{first[item]}])", (index,))
        first[item] = index
    return items


class AuditLogConfig(Section):
    """The Parquet log of the audit's rows, one per settled (group, topic, minute) (schema: docs/audit.md)."""

    enabled: bool = True
    """Write the log; the SLO engine's `audit` sources read its `broker` folder."""
    dir: Path | None = None
    """The log's root (`broker/date=YYYY-MM-DD/part-*.parquet` below it); None means `<state dir>/sli/audit`.
    Relative paths are relative to the process's working directory."""
    flush_interval_s: PositiveSeconds = Field(default=60.0, le=60)
    """Rows reach disk at least this often (and on stop); at most a minute, as for the canary's log."""
    max_bytes: int = Field(default=1 << 30, ge=1 << 20, le=1 << 40)
    """The log's size bound: the oldest files are removed first once it is exceeded (at least 1 MiB)."""
    queue_size: int = Field(default=100_000, ge=1, le=10_000_000)
    """Rows waiting for the writer at most; a cycle's rows that do not fit are dropped together and counted, the
    audit never waits. Keep it above one cycle's rows (groups x topics x minutes settling)."""


class AuditReconcileConfig(Section):
    """The reconciliation in `kafka-pulse run` (docs/audit.md, "Reconciliation"): a Spark stream over the SLI sink's
    `audit-client` and `audit-broker` topics; findings to `<audit.log.dir>/findings` and /metrics."""

    enabled: bool = False
    """Run the reconciliation; needs `sli_sink` (its cluster and topic prefix say where the counts are)."""
    deadline_s: PositiveSeconds = Field(default=1200.0, ge=60, le=86_400)
    """A minute is judged once the reports moved this far past it; later reports of it are left out and counted.
    Keep it above `max_wait_s` plus the client reporting interval, so a lagging group's rows come in time."""
    trigger_s: PositiveSeconds = Field(default=60.0, ge=1, le=3600)
    """Time between micro-batches."""
    counted_groups: list[GroupId] = Field(default_factory=list, max_length=10_000)
    """Groups that report client counts: a minute the broker has their row of and they reported nothing for counts
    as processed by none (skipped); other groups without client counts are judged by the broker's rows alone."""

    @field_validator("counted_groups")
    @classmethod
    def _unique_groups(cls, groups: list[str]) -> list[str]:
        return _unique(groups, "group")


class AuditConfig(Section):
    """The broker-side audit: per watched topic and group, the records written per minute of their timestamps and
    when the group's committed offset passed each minute's end (docs/audit.md)."""

    enabled: bool = False
    """Run the audit in `kafka-pulse run`; needs `topics` and `groups`."""
    cluster: Name | None = None
    """The cluster in `clusters:` whose topics are audited; None means the only configured cluster."""
    topics: list[TopicName] = Field(default_factory=list, max_length=10_000)
    """Topics to audit (each partition's minute boundaries are read by record timestamp)."""
    groups: list[GroupId] = Field(default_factory=list, max_length=10_000)
    """Consumer groups whose committed offsets are followed on every topic of `topics`."""
    interval_s: PositiveSeconds = Field(default=15.0, ge=1, le=60)
    """Time between cycles (aligned to the wall clock); the latency's resolution."""
    grace_s: Seconds = Field(default=10.0, le=300)
    """A minute boundary is read this long after it passed, so records of the minute still on their way count."""
    max_wait_s: PositiveSeconds = Field(default=900.0, ge=60, le=86_400)
    """A (group, topic, minute) the group has not passed this long after the minute's end settles incomplete."""
    lookback_s: Seconds = Field(default=0.0, le=86_400)
    """At start, read the minutes back this far (those in flight when an earlier run stopped, say); 0 starts at
    the newest due minute boundary. A minute passed before the first cycle gets that cycle as its passed time."""
    timeout_s: PositiveSeconds = Field(default=10.0, le=120)
    """Limit of each Kafka request round of a cycle; a cycle that runs into it fails, is counted, and the next
    one catches up."""
    log: AuditLogConfig = AuditLogConfig()
    """The Parquet log of the rows (the SLO engine's `audit` source); with `sli_sink.enabled` the rows are also
    published to `<sli_sink.topic_prefix>audit-broker`."""
    reconcile: AuditReconcileConfig = AuditReconcileConfig()
    """The reconciliation of client and broker counts (runs with or without the broker-side audit here)."""

    @field_validator("topics")
    @classmethod
    def _unique_topics(cls, topics: list[str]) -> list[str]:
        return _unique(topics, "topic")

    @field_validator("groups")
    @classmethod
    def _unique_groups(cls, groups: list[str]) -> list[str]:
        return _unique(groups, "group")

    @model_validator(mode="after")
    def _deadline_after_max_wait(self) -> Self:
        if self.reconcile.enabled and self.enabled and self.reconcile.deadline_s <= self.max_wait_s:
            raise config_problem(
                f"reconcile.deadline_s ({self.reconcile.deadline_s:g}) must exceed max_wait_s ({self.max_wait_s:g}):"
                " a minute would be judged before the audit settles it",
                ("reconcile", "deadline_s"),
            )
        return self

    @model_validator(mode="after")
    def _watches_something(self) -> Self:
        if self.enabled:
            for key in ("topics", "groups"):
                if not getattr(self, key):
                    raise config_problem(f"required when the audit is enabled: the {key} to audit", (key,))
        return self
