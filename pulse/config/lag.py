"""Config section `lag:`: the consumer-lag evaluator, by Burrow's setting names plus ours. The one declaration
of every lag setting: the service, `lag replay` and the Burrow config endpoints all read `LagConfig`."""

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, model_validator

from pulse.config.types import HostPort, PositiveSeconds, Regex, Seconds, Section
from pulse.envsubst import config_problem


class ExactTimeLagConfig(Section):
    """Exact time lag: the timestamp of the record at each lagging group's committed offset, read from Kafka."""

    enabled: bool = False
    """Read record timestamps for `exact_lag_seconds`; costs one fetch per lagging partition."""
    interval_s: PositiveSeconds = 10.0
    """How often the lagging partitions' record timestamps are looked up."""
    max_fetches_per_cycle: int = Field(default=100, ge=1, le=100_000)
    """Records read per cluster per cycle at most (bounded work); the rest wait for the next cycle."""
    fetch_timeout_s: PositiveSeconds = 5.0
    """How long one cycle waits for its records; a partition not answered in time is retried next cycle."""
    cache_size: int = Field(default=100_000, ge=1, le=100_000_000)
    """(partition, offset) -> timestamp entries kept; a committed offset is read once while it stays."""


class PageCacheConfig(Section):
    """The page-cache hint: flag groups whose lag reaches further back than the brokers' page cache holds, so their
    reads go to disk (the Kuaishou seed). Give `window_s`, or `size_bytes` to derive it from the produce rate."""

    enabled: bool = False
    """Flag groups `beyond_page_cache`; needs `window_s` or `size_bytes`."""
    window_s: PositiveSeconds | None = None
    """Seconds of recent data the brokers' page cache holds, as the operator measured it."""
    size_bytes: int | None = Field(default=None, gt=0, le=1 << 40)
    """Page cache per broker available for log data; the window is this / the broker's write rate in bytes/s."""
    record_bytes: float = Field(default=1024.0, gt=0, le=1 << 30)
    """Average record size on disk (batch overhead included), to turn HWM rates (records/s) into bytes/s."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.enabled and (self.window_s is None) == (self.size_bytes is None):
            raise config_problem("give exactly one of window_s or size_bytes when the page-cache hint is enabled")
        return self


class ShareGroupsConfig(Section):
    """Share groups (KIP-932): each partition's start offset and lag as the broker computes it (KIP-1226), the
    group's state and members, and a start offset that stops moving while records wait judged STALLED."""

    enabled: bool = False
    """Read share groups with ShareGroupDescribe and DescribeShareGroupOffsets (Kafka 4.1+ with share.version=1)."""
    refresh_s: PositiveSeconds = 30.0
    """How often every share group of a cluster is read (one request of each kind per group coordinator)."""
    stall_after_s: PositiveSeconds = 300.0
    """A start offset unmoved for longer than this while its lag is above 0 is STALLED (a record cycling toward
    `group.share.delivery.count.limit`, or no member consuming)."""


class StreamsGroupsConfig(Section):
    """Streams groups (KIP-1071): each group's state, epochs and members, NOT_READY and members on a stale topology
    epoch flagged. Their input-topic lag is judged with the consumer groups' rules (their commits are consumer-group
    commits); admin ingestion finds their commits only while this is on."""

    enabled: bool = False
    """Describe streams groups with StreamsGroupDescribe (Kafka 4.2+, or 4.1 with streams groups enabled)."""
    refresh_s: PositiveSeconds = 30.0
    """How often every streams group of a cluster is described (one request per group coordinator)."""


class LagNotifyConfig(Section):
    """Incidents per consumer group, sent through the alert sink (`alerting`) and resolved on recovery."""

    enabled: bool = False
    """Open and resolve incidents per group; needs `alerting.enabled`."""
    severity: Literal["WARN", "ERR"] = "ERR"
    """The lowest group status that opens an incident (Burrow's notifier `threshold`: 2 WARN, 3 ERR)."""
    interval_s: PositiveSeconds = 30.0
    """How often every group is evaluated for notification (Burrow's notifier `interval`); resending, keep-alive,
    routing labels and the spool are `alerting`'s."""


class LagEvaluationLogConfig(Section):
    """The lag evaluation log: every `interval_s`, one Parquet row per consumer group (and, opt-in, per
    group-partition), read by the SLO engine as a `lag` source (schema: docs/sli-log.md, "Lag evaluation log")."""

    enabled: bool = True
    """Write the evaluation log; the SLO engine's `lag` sources read it."""
    dir: Path | None = None
    """The log's root (`groups/date=YYYY-MM-DD/part-*.parquet` and `partitions/...` below it); None means
    `<state dir>/sli/lag`. Relative paths are relative to the process's working directory."""
    interval_s: PositiveSeconds = Field(default=15.0, le=60)
    """How often every group is evaluated and written; at most a minute, so every minute holds a row of each group
    (timeslice SLOs count minutes)."""
    partitions: bool = False
    """Also a row per group-partition each cycle (`partitions/`); off by default since it grows with the partition
    count, while group rows grow with the group count."""
    flush_interval_s: PositiveSeconds = Field(default=60.0, le=60)
    """Rows reach disk at least this often (and on stop); at most a minute, as for the canary's log."""
    max_bytes: int = Field(default=1 << 30, ge=1 << 20, le=1 << 40)
    """The size bound of the whole log (group and partition rows): the oldest files go first (at least 1 MiB)."""
    queue_size: int = Field(default=1_000_000, ge=1, le=100_000_000)
    """Rows waiting for the writer at most; a cycle's group rows (or its partition rows) that do not fit are dropped
    together and counted, evaluation never waits. Keep it above the rows of one cycle."""


IngestionMode = Literal["consumer_offsets", "admin"]

LagMode = Literal["burrow", "burrow-1.2", "enhanced"]
"""Rule set: Burrow v1.9.5's rules, Debian Burrow 1.2.1's rules, or ours (the default)."""


CheckStatusName = Literal["OK", "WARN", "CRIT", "UNKNOWN"]
"""A health-check status (`kafka-pulse check`'s), as a lag verdict may be mapped to."""


class LagCheckStatusMap(Section):
    """For the groups `pattern` matches (`re.fullmatch`), the check status each lag status maps to; a status left
    out keeps the default (docs/check.md, "Lag verdicts"). STOP, STALL and REWIND fall back to `err` first."""

    pattern: Regex
    """Group names this entry covers, matched whole (`batch-.*`); the first matching entry wins."""
    ok: CheckStatusName | None = None
    """Check status of a group the evaluator finds OK (default OK)."""
    warn: CheckStatusName | None = None
    """... of a WARN group (lag growing; default WARN)."""
    err: CheckStatusName | None = None
    """... of an ERR group, and of STOP, STALL or REWIND when those are not given (default CRIT)."""
    stop: CheckStatusName | None = None
    """... of an ERR group whose worst partition is STOP (the consumer stopped committing; default: `err`)."""
    stall: CheckStatusName | None = None
    """... of an ERR group whose worst partition is STALL (commits without progress), and of a STALLED share group
    (its start offset unmoved while records wait; default: `err`)."""
    rewind: CheckStatusName | None = None
    """... of an ERR group whose worst partition is REWIND (offsets moved back; default: `err`)."""
    notfound: CheckStatusName | None = None
    """... of a group the evaluator does not know (default UNKNOWN)."""
    unknown: CheckStatusName | None = None
    """... of a group whose cluster cannot be read now (default UNKNOWN)."""


class LagConfig(Section):
    """Consumer-lag evaluator (lag/): Burrow's settings by their Burrow names, plus ours."""

    enabled: bool = True
    """Run the evaluator; `run` leaves it out and `kafka-pulse lag` refuses to start when false."""
    mode: LagMode = "enhanced"
    """Rule set: Burrow's current rules, Burrow 1.2's, or ours (time lag aware)."""
    intervals: int = Field(default=10, ge=2, le=255)
    """Offsets kept per partition window, as Burrow's `intervals`; the rules compare at least two."""
    offset_refresh_s: PositiveSeconds = 10.0
    """How often HWMs are read (Burrow's `offset-refresh`)."""
    min_distance_s: Seconds = 0.0
    """A commit closer than this to the previous stored one replaces it (Burrow's `min-distance`)."""
    allowed_lag: int = Field(default=0, ge=0)
    """Lag at or below this counts as caught up (Burrow >= 1.3.7 `allowed-lag`; ignored by burrow-1.2)."""
    minimum_complete: float = Field(default=0.0, ge=0, le=1)
    """Windows filled less than this are OK without rules (Burrow's `minimum-complete`)."""
    expire_group_s: PositiveSeconds = 604_800.0
    """A group with no commit for this long is forgotten (Burrow's `expire-group`, 7 days)."""
    hwm_history: int = Field(default=60, ge=2, le=65535)
    """HWM samples kept per partition for time lag, idle detection and produce rates."""
    stale_after_s: PositiveSeconds | None = None
    """A cluster whose offsets were not refreshed for this long is unknown (default 3 x the slowest refresh)."""
    recovery_s: Seconds | None = None
    """After an outage, groups stay unknown this long while commits catch up (default 3 x offset_refresh_s)."""
    group_allow: Regex = ".*"
    """Groups evaluated (`re.search`, Burrow's allowlist); `.*` evaluates every group. Judged once per group name;
    a pattern that can backtrack exponentially (a quantifier inside a quantifier) is refused at load."""
    group_deny: Regex | None = None
    """Groups never evaluated even when `group_allow` matches (Burrow's denylist)."""
    max_group_name_bytes: int = Field(default=1024, ge=1, le=32_767)
    """Groups whose id is longer than this (UTF-8 bytes) are dropped at ingestion, never stored or exported, and
    counted (`kafka_pulse_lag_groups_dropped_total{reason="name_too_long"}`): Kafka allows 32 KiB ids, and a
    group's id is repeated on every one of its per-partition lines."""
    max_groups: int = Field(default=1_000_000, ge=1, le=100_000_000)
    """Groups stored per cluster at most; a new group past it is dropped at ingestion and counted
    (`reason="too_many_groups"`), so a flood of group ids cannot grow memory and scrapes without bound."""
    ingestion: IngestionMode = "consumer_offsets"
    """Where commits come from: the `__consumer_offsets` topic (commit timestamps from the broker) or the Admin API
    (committed offsets polled per group; the poll time stands in for the commit time)."""
    ingestion_by_cluster: dict[str, IngestionMode] = Field(default_factory=dict)
    """Per-cluster exceptions to `ingestion`, by cluster name (e.g. a cluster whose internal topic is not readable)."""
    group_offsets_refresh_s: PositiveSeconds | None = None
    """Admin ingestion: how often committed offsets are polled (default offset_refresh_s)."""
    exact_time_lag: ExactTimeLagConfig = ExactTimeLagConfig()
    """The record-timestamp lookup behind `exact_lag_seconds` (off by default)."""
    page_cache: PageCacheConfig = PageCacheConfig()
    """The page-cache hint behind `beyond_page_cache` (off by default)."""
    share_groups: ShareGroupsConfig = ShareGroupsConfig()
    """Share groups' lag and stalled start offsets (off by default; docs/lag.md, "Share groups")."""
    streams_groups: StreamsGroupsConfig = StreamsGroupsConfig()
    """Streams groups' state, epochs and members (off by default; docs/lag.md, "Streams groups")."""
    notify: LagNotifyConfig = LagNotifyConfig()
    """Incidents per consumer group through `alerting` (Burrow's notifier; off by default)."""
    evaluation_log: LagEvaluationLogConfig = LagEvaluationLogConfig()
    """The Parquet log of every group's verdict, the `lag` source of lag SLOs."""
    check_statuses: list[LagCheckStatusMap] = Field(default_factory=list)
    """How the evaluator's group verdicts count in the health check (`check`, the status page's overall verdict):
    per group pattern, overrides of the default ERR/STOP/STALL/REWIND -> CRIT, WARN -> WARN, OK -> OK, NOTFOUND
    and UNKNOWN -> UNKNOWN (e.g. `{pattern: "batch-.*", err: WARN}`)."""
    status_page_groups: int = Field(default=100, ge=0, le=100_000)
    """OK groups the status page (`/api/status`) lists, the most lagging first, beside every group that is not
    OK (always listed); the others are counted per cluster and status. Per-group detail is on the Burrow API."""
    listen: HostPort | None = None
    """The Burrow v3 API and /metrics listener of `kafka-pulse lag` (default: `http.listen`)."""
    metrics_granularity: Literal["partition", "group"] = "partition"
    """`group` exports only the per-group families on /metrics (as KMinion's `granularity: topic` trims its own):
    per-partition series are most of a scrape at scale. The Burrow API and the evaluation log keep every detail."""
    metrics_per_member: bool = False
    """Also export each member's lag on /metrics (`kafka_pulse_lag_member_*`, by client id and host): which member
    owns the worst partitions. Off by default: it costs one more evaluation per scrape and a series per member."""
    switch_interval_s: float | None = Field(default=0.002, gt=0, le=0.1, allow_inf_nan=False)
    """The interpreter's thread switch interval (`sys.setswitchinterval`) while lag runs, for the whole process:
    how long an API request may wait for the interpreter lock while a thread decodes commits. Status p99 while
    ingesting flat out was 11-12 ms with Python's 5 ms, 6.2-6.4 ms with 2 ms for 6-8 % more CPU per record, 3.4-3.9
    ms with 1 ms for 20 % more (docs/benchmarks.md, "Status while ingesting"); None leaves the interpreter's."""

    @model_validator(mode="after")
    def _stale_after_a_refresh(self) -> Self:
        slowest = max(self.offset_refresh_s, self.group_offsets_refresh_s or 0.0)
        if self.stale_after_s is not None and self.stale_after_s <= slowest:
            raise config_problem(
                f"{self.stale_after_s:g} s must be longer than the slowest refresh ({slowest:g} s), or every cluster "
                "would turn unknown between two refreshes",
                ("stale_after_s",),
            )
        return self

    def effective_stale_after_s(self) -> float:
        return self.stale_after_s or 3 * max(self.offset_refresh_s, self.group_offsets_refresh_s or 0.0)

    def effective_recovery_s(self) -> float:
        return self.recovery_s if self.recovery_s is not None else 3 * self.offset_refresh_s

    def effective_group_refresh_s(self) -> float:
        """Admin ingestion's poll interval: `group_offsets_refresh_s`, else `offset_refresh_s`."""
        return self.group_offsets_refresh_s or self.offset_refresh_s

    def effective_group_allow(self) -> str | None:
        """The allowlist regex, or None when it lets every group through (`.*` or empty: no filter to run)."""
        return None if self.group_allow in ("", ".*") else self.group_allow

    def ingestion_for(self, cluster: str) -> IngestionMode:
        return self.ingestion_by_cluster.get(cluster, self.ingestion)
