"""The process's one SparkSession, built from `slo.spark_master`; created only after the SLO spec was accepted."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from pulse.errors import DependencyMissing

LOCAL_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",  # small state; AQE coalesces further
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.ansi.enabled": "false",
    # A log file listed and then removed before it is read (the size bound, or compaction merging a closed date)
    # is skipped: that run misses its rows, the next one reads them merged, and the job does not fail.
    "spark.sql.files.ignoreMissingFiles": "true",
}
"""Settings for every master; a local master also binds the driver to loopback."""


def spark_session(
    master: str, app_name: str = "kafka-pulse-slo", extra: Mapping[str, str] | None = None
) -> SparkSession:
    """The active session if there is one (tests share one), else a new one on `master` with `extra` settings."""
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = dict(LOCAL_SETTINGS)
    if master.startswith("local"):
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    settings |= dict(extra or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except FileNotFoundError as exc:  # no `java` on PATH
        raise DependencyMissing(f"Spark needs Java 17+ on PATH to start ({exc})") from exc
