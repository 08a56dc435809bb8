"""The process's one SparkSession, built from `slo.spark_master`; created only after the SLO spec was accepted.

On a cluster master the driver also ships its own `slo` and `pulse` packages to the executors (docs/slo.md,
"Running the job on a Spark cluster"): the backtest's pandas UDF runs slo/evaluation.py there.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pyspark import SparkFiles
from pyspark.sql import SparkSession

import pulse
import slo
from pulse.errors import DependencyMissing

CODE_ZIP = "kafka-pulse-code.zip"
"""What `ship_code` sends to executors: the driver's `slo` and `pulse` packages (sources only)."""

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
    # The driver's status store keeps 1,000 jobs, stages and SQL executions (each with its plan text) by default,
    # UI or not: a job evaluating every minute grew its JVM 7 % an hour in the soak until the store filled.
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "1000",
    "spark.ui.retainedDeadExecutors": "10",
    "spark.sql.ui.retainedExecutions": "50",
    "spark.sql.streaming.ui.retainedQueries": "10",
    "spark.sql.streaming.ui.retainedProgressUpdates": "50",
}
"""Settings for every master; a local master, or one on loopback, also binds the driver to loopback."""

NO_SUBSTITUTION = {"spark.sql.variable.substitute": "false"}
"""Applied last, whatever `extra` says: Spark would otherwise replace `${env:VAR}`, `${system:prop}` and
`${spark:key}` in an SLO expression's text before parsing it, handing the process's secrets to the SLI."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def on_loopback(master: str) -> bool:
    """True for `local...` and for a master URL on this host's loopback (`spark://127.0.0.1:7077`): its executors
    can then reach the driver only on loopback, so the driver must not advertise the host's outside address."""
    if master.startswith("local"):
        return True
    try:
        return urlsplit(master).hostname in LOOPBACK_HOSTS
    except ValueError:
        return False


def session_settings(
    master: str, extra: Mapping[str, str] | None = None, driver_memory: str | None = None
) -> dict[str, str]:
    """Every setting a new session on `master` gets (pure); `driver_memory` caps the driver's heap, with the
    serial collector, whose footprint suits a heap this small. Substitution stays off whatever `extra` says."""
    settings = dict(LOCAL_SETTINGS)
    if on_loopback(master):
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    if driver_memory is not None:
        settings |= {"spark.driver.memory": driver_memory, "spark.driver.extraJavaOptions": "-XX:+UseSerialGC"}
    return settings | dict(extra or {}) | NO_SUBSTITUTION


def spark_session(
    master: str,
    app_name: str = "kafka-pulse-slo",
    extra: Mapping[str, str] | None = None,
    driver_memory: str | None = None,
) -> SparkSession:
    """The active session if there is one (tests share one), else a new one on `master` (`session_settings`)."""
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_settings(master, extra, driver_memory).items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except FileNotFoundError as exc:  # no `java` on PATH
        raise DependencyMissing(f"Spark needs Java 17+ on PATH to start ({exc})") from exc
    for key, value in NO_SUBSTITUTION.items():  # also on a session someone else built first
        session.conf.set(key, value)
    if not (session.sparkContext.master or "local").startswith("local"):
        ship_code(session)
    return session


def ship_code(session: SparkSession) -> None:
    """Add the driver's `slo` and `pulse` sources to the session's Python files once, so executors import exactly
    the driver's version (they still need pyspark's, pandas', pyarrow's and pydantic's own packages installed)."""
    folder = Path(SparkFiles.getRootDirectory()) / "kafka-pulse"  # Spark deletes its root when the session stops
    archive = folder / CODE_ZIP
    if archive.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for package in (slo, pulse):
            root = Path(package.__file__ or "").parent
            for source in sorted(root.rglob("*.py")):
                bundle.write(source, source.relative_to(root.parent))
    session.sparkContext.addPyFile(str(archive))
