"""Config section `slo:`: the burn-rate job (where specs, Spark, results and the Pushgateway are)."""

from pathlib import Path

from pulse.config.types import ExistingFile, HttpUrl, PositiveSeconds, Section


class SloConfig(Section):
    """Burn-rate job (slo/)."""

    enabled: bool = True
    spec: ExistingFile | None = None
    """SLO spec file; SLOs may also be given inline under the top-level `slos` key."""
    spark_master: str = "local[*]"
    """Any Spark master URL: `local[*]`, `spark://host:7077`, `yarn`, `k8s://...`."""
    schedule_s: PositiveSeconds = 60.0
    results_dir: Path | None = None
    """Each evaluation also writes `evaluation-<time>.parquet` here (relative to the working directory)."""
    pushgateway_url: HttpUrl | None = None
    """Each evaluation also pushes its budget gauges (job `kafka-pulse-slo`) to this Pushgateway, for Grafana."""
