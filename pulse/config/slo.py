"""Config section `slo:` (the burn-rate job: where specs, Spark, results and the Pushgateway are) and the top-level
`slos:` key: each entry an SLO in our form (`SloSpec`, the YAML shape) or an OpenSLO v1 document, typed here so the
whole file is refused in one pass with key paths. The checks that need the SLO engine (windows against the budget,
Spark SQL, source columns) are slo/spec.py's, run on these models.
"""

from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from pulse.config.outbound import HttpClientConfig
from pulse.config.types import ExistingFile, HttpUrl, PositiveSeconds, Section, StorageLocation, http_url
from pulse.names import LABEL_NAME, SLO_NAME


class SloConfig(Section):
    """Burn-rate job (slo/)."""

    enabled: bool = True
    """Run the SLO schedule in `run` and `check`'s budget section; off leaves both out."""
    spec: ExistingFile | None = None
    """SLO spec file; SLOs may also be given inline under the top-level `slos` key."""
    spark_master: str = "local[*]"
    """Any Spark master URL: `local[*]`, `spark://host:7077`, `yarn`, `k8s://...`."""
    driver_memory: Annotated[str, Field(pattern=r"^[1-9][0-9]*[mg]$")] = "512m"
    """Heap of Spark's driver JVM (`spark.driver.memory`, at least 450m); on a local master the executors share it.
    Bounds the JVM that `run` keeps between evaluations; raise it for thousands of SLOs."""
    schedule_s: PositiveSeconds = 60.0
    """How often `run` evaluates every SLO (and delivers its alerts)."""
    engine: Literal["batch", "stream"] = "batch"
    """`batch`: each cycle of `run` rescans every SLO's window in its Parquet sources; `stream`: `run` reads the SLI
    sink's topics on `sli_sink.cluster` with Spark Structured Streaming and each cycle evaluates the minute buckets
    kept since the last one (`slo stream`'s engine, docs/slo.md, "Streaming from Kafka")."""
    stream_watermark_s: PositiveSeconds = 120.0
    """With `engine: stream`: how late an event may arrive and still count (`slo stream --watermark`)."""
    stream_dir: StorageLocation | None = None
    """Where the stream keeps its checkpoint (`checkpoint/`) and bucket table (`buckets/`): a local directory or a
    URL Spark writes to as given (`file:///...`, `hdfs://namenode:8020/...`, `s3a://bucket/...`), so executors on
    other hosts need no shared mount; default `<state dir>/slo-stream` (`slo stream --state-dir` overrides it)."""

    @field_validator("driver_memory")
    @classmethod
    def _spark_accepts(cls, value: str) -> str:
        megabytes = int(value[:-1]) * (1024 if value.endswith("g") else 1)
        if megabytes < 450:
            raise ValueError(f"{value} is below the 450m Spark's driver needs to start")
        return value

    results_dir: Path | None = None
    """Each evaluation also writes `evaluation-<time>.parquet` here (relative to the working directory)."""
    pushgateway_url: HttpUrl | None = None
    """Each evaluation also pushes its budget gauges (job `kafka-pulse-slo`) to this Pushgateway, for Grafana."""
    pushgateway_client: HttpClientConfig = HttpClientConfig()
    """Login (`basic_auth` or `bearer_token`) and `ca_file` for `pushgateway_url`."""


Duration = Annotated[str, Field(min_length=1)]


class EventsSourceSpec(Section):
    """Parquet SLI events: the canary's log (`events`), the lag evaluation log (`lag`) or the broker-side audit's
    rows (`audit`)."""

    type: Literal["events", "lag", "audit"]
    """`events`: the canary's SLI log; `lag`: the lag evaluation log; `audit`: the data-flow audit's
    per-(group, topic, minute) rows (`<audit.log.dir>/broker`)."""
    path: str
    """Directory of Parquet files (relative paths are relative to the config file)."""
    filter: str | None = None
    """Spark SQL condition on the rows, e.g. `cluster = 'prod'`."""


class PrometheusSourceSpec(HttpClientConfig):
    """A counter pair in Prometheus; `good` and `total` are then PromQL (events in the minute before each step).
    `basic_auth`, `bearer_token` and `ca_file` are the login and CA for `url`."""

    type: Literal["prometheus"]
    """`prometheus`: `good` and `total` are PromQL."""
    url: Annotated[str, http_url("http://127.0.0.1:9090")]
    """The Prometheus base URL the PromQL is sent to (`/api/v1/query_range`)."""
    timeout_s: PositiveSeconds = 30.0
    """Limit of one request to `url`; a slower answer makes the source unreadable for that evaluation."""


def _tag(kind: str) -> Tag:
    """Union members are tagged `~name`; the tag is dropped from key paths in messages (`_clean_loc`)."""
    return Tag(f"~{kind}")


def _source_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
    return "~prometheus" if kind == "prometheus" else "~events"


SourceSpec = Annotated[
    Annotated[EventsSourceSpec, _tag("events")] | Annotated[PrometheusSourceSpec, _tag("prometheus")],
    Discriminator(_source_kind),
]


class CalendarWindowSpec(Section):
    """`{calendar: 1M, timezone: Europe/Berlin}`: the calendar month (or `1w`, Monday to Monday) in that zone."""

    calendar: Literal["1w", "1M"]
    """`1w` (Monday to Monday) or `1M` (the calendar month)."""
    timezone: str = "UTC"
    """IANA zone the calendar period starts in (e.g. Europe/Berlin)."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{zone!r} is not an IANA time zone (e.g. UTC, Europe/Berlin)") from None
        return zone


class TimesliceSpec(Section):
    """Budget by minutes: a minute is good when at least `slice_target` percent of its events are good."""

    method: Literal["timeslices"]
    """`timeslices`: the budget counts minutes instead of events."""
    slice: Literal["1m"] = "1m"
    """Slice length; one minute is the only one."""
    slice_target: Decimal = Field(default=Decimal(100), gt=0, le=100)
    """Percent of a minute's events that must be good for the minute to be good (100 = all)."""


class BurnWindowSpec(Section):
    """One long/short pair; give the share of the budget it detects (`budget_percent`, factors then follow the SLO
    window) or a fixed burn-rate `factor`."""

    long: Duration
    """The long window (e.g. `1h`): the burn rate must hold over it."""
    short: Duration
    """The short window (e.g. `5m`): it must still hold now, so the alert resolves quickly."""
    budget_percent: Decimal | None = Field(default=None, gt=0, le=100)
    """Share of the budget this pair detects being spent; the factor follows from the SLO window."""
    factor: Decimal | None = Field(default=None, gt=0)
    """A fixed burn-rate threshold instead of `budget_percent`."""

    @model_validator(mode="after")
    def _one_threshold(self) -> Self:
        if (self.budget_percent is None) == (self.factor is None):
            raise ValueError("give exactly one of budget_percent (share of the budget) or factor (burn rate)")
        return self


class AlertTierSpec(Section):
    """A severity's pairs; `windows` absent means the SRE Workbook pairs for that severity."""

    disabled: bool = False
    """Never raise this severity."""
    windows: list[BurnWindowSpec] | None = None
    """Long/short pairs; absent means the SRE Workbook pairs for this severity."""


class AlertPolicySpec(Section):
    """Multiwindow multi-burn-rate alerting (SRE Workbook ch. 5, table 5-8 plus its 1d/2h ticket pair)."""

    page: AlertTierSpec = AlertTierSpec()
    """Pairs that page (severity `page`)."""
    ticket: AlertTierSpec = AlertTierSpec()
    """Pairs that open a ticket (severity `ticket`)."""
    min_events: float = Field(default=0, ge=0)
    """Low-traffic guard: a long window holding fewer events never fires."""
    forecast_window: Duration = "6h"
    """Rates over this window are assumed to continue, for `exhaustion_at` and `projected_sli`."""


class SloSpec(Section):
    """One `slos:` entry in our form; an entry with `apiVersion` is an OpenSLO v1 document instead (docs/slo.md)."""

    name: str
    """Unique SLO name: lower-case letters, digits, `-`, `_`, `.`; the `slo` label of results and alerts."""
    description: str = ""
    """Free text carried to results and alerts."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Carried to results and alerts; identity, so never numbers."""
    source: SourceSpec
    """Where the SLI events come from: a Parquet log (`events`, `lag`, `audit`) or Prometheus."""
    good: str
    """Spark SQL over one row (PromQL for a Prometheus source): the good events it counts."""
    total: str
    """Spark SQL over one row (PromQL for a Prometheus source): all the events it counts."""
    objective: Decimal
    """Percent, strictly between 0 and 100."""
    window: Annotated[
        Annotated[str, _tag("rolling")] | Annotated[CalendarWindowSpec, _tag("calendar")],
        Discriminator(lambda v: "~calendar" if isinstance(v, Mapping | CalendarWindowSpec) else "~rolling"),
    ] = "30d"
    """Rolling (`30d`) or `{calendar: 1M, timezone: Europe/Berlin}`."""
    budgeting: Annotated[
        Annotated[Literal["occurrences"], _tag("occurrences")] | Annotated[TimesliceSpec, _tag("timeslices")],
        Discriminator(lambda v: "~timeslices" if isinstance(v, Mapping | TimesliceSpec) else "~occurrences"),
    ] = "occurrences"
    """`occurrences` (a ratio of event sums) or `{method: timeslices, ...}` (a ratio of good minutes)."""
    alerting: AlertPolicySpec = AlertPolicySpec()
    """Multiwindow burn-rate alerting; the SRE Workbook pairs by default."""
    group_by: list[str] = Field(default_factory=list)
    """Label columns: one SLO instance per distinct value (per topic, per consumer group, ...)."""

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not SLO_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid SLO name: lower-case letters, digits, '-', '_', '.'")
        return name

    @field_validator("objective")
    @classmethod
    def _objective_range(cls, objective: Decimal) -> Decimal:
        if not 0 < objective < 100:
            raise ValueError(f"{objective} is not a percentage strictly between 0 and 100 (e.g. 99.9)")
        return objective

    @field_validator("group_by")
    @classmethod
    def _label_names(cls, labels: list[str]) -> list[str]:
        for label in labels:
            if not LABEL_NAME.fullmatch(label):
                raise ValueError(f"{label!r} is not a column name")
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels repeat: {labels}")
        return labels


OpenSloDocument = dict[str, Any]
"""An OpenSLO v1 document (it has `apiVersion`), kept as written: slo/openslo.py converts it to `SloSpec`s, resolving
references across documents."""

SloEntry = Annotated[
    Annotated[SloSpec, _tag("slo")] | Annotated[OpenSloDocument, _tag("openslo")],
    Discriminator(lambda v: "~openslo" if isinstance(v, Mapping) and "apiVersion" in v else "~slo"),
]
"""One `slos:` item."""
