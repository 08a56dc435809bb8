"""`kafka-pulse check`: one health check of a cluster, as a table or `--json`, exiting 0 OK, 1 WARN, 2 CRIT or
3 UNKNOWN (the Nagios convention), within `--timeout` seconds of the process's start."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kafka_pulse.check.deadline import Deadline, process_age_s
from kafka_pulse.check.judge.verdict import Report, Section, Status
from kafka_pulse.cli.options import config_option
from pulse.errors import PulseError
from pulse.lifecycle import configure_logging
from pulse.redact import redact_text

if TYPE_CHECKING:
    from kafka_pulse.check.health_check import LagSource
    from pulse.config import PulseConfig

EXIT_RESERVE_S = 0.4
"""Of `--timeout`, what is kept back for rendering the report and leaving the process (client teardown is left to
daemon threads, so it never holds the exit)."""
MIN_WORK_S = 0.5
"""With less than this left after start-up, nothing is asked: every answer would be a timeout, i.e. a false CRIT."""


class BudgetSpent(PulseError):
    """The check's time budget was gone before it could ask anything."""


def startup_s() -> float | None:
    """Seconds since this process started when it was started for `check` (`kafka-pulse check ...`), so the budget
    covers interpreter start and imports as a cron job or Nagios sees them; None for an in-process call (a test's
    CliRunner), whose process started long before."""
    if "check" not in sys.argv[1:2]:
        return None
    return process_age_s()


def _listener(url: str | None, config: PulseConfig, cluster: str, deadline: Deadline) -> LagSource | None:
    """The lag verdicts of the listener at `url`, read within `deadline`; None without a URL."""
    if url is None:
        return None
    from functools import partial

    from kafka_pulse.check.consult.lag_listener import listener_name, read_listener_shares, read_listener_verdicts
    from kafka_pulse.check.health_check import LagSource

    return LagSource(
        listener_name(url),
        partial(read_listener_verdicts, url, cluster, config.http, deadline),
        partial(read_listener_shares, url, cluster, config.http, deadline),
    )


@click.command()
@config_option
@click.option(
    "--cluster", "cluster_name", default=None, help="The configured cluster to check (default: the only one)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (schema in docs/check.md).")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1.0),
    default=5.0,
    show_default=True,
    help="Seconds for the whole command, counted from the process's start; every Kafka call gets a deadline "
    "inside it, and what has not answered by then is reported as such.",
)
@click.option(
    "--lag-url",
    "lag_url",
    default=None,
    metavar="URL",
    help="A running `kafka-pulse run` or `lag` listener (http://127.0.0.1:9308) whose evaluator's group verdicts "
    "judge the lag section, with http.basic_auth as the login (or the URL's own user:password@); without it, the "
    "lag section is one snapshot and judges no group.",
)
@click.pass_context
def check(
    ctx: click.Context,
    config_path: Path | None,
    cluster_name: str | None,
    as_json: bool,
    timeout_s: float,
    lag_url: str | None,
) -> None:
    """Is Kafka OK, and if not, what is wrong: brokers, controller, partitions (with the common-broker diagnosis),
    a canary round trip through every broker, the worst consumer lag and SLO budgets.

    Exits 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN (also for a config that cannot be used).
    """
    started = time.monotonic() - (startup_s() or 0.0)
    deadline = Deadline(started + timeout_s - EXIT_RESERVE_S)
    configure_logging(quieter={"kafka": logging.CRITICAL})  # kafka-python's connection errors: the verdict says it
    cluster_label = cluster_name or "?"
    servers: tuple[str, ...] = ()
    try:
        if deadline.remaining() < MIN_WORK_S:  # the interpreter's start-up ate the budget (a starved host)
            raise BudgetSpent(
                f"start-up took {time.monotonic() - started:.1f} s of the {timeout_s:g} s budget, nothing was "
                "asked; give a larger --timeout"
            )
        from devstack import dev_home
        from kafka_pulse.check.health_check import run_check
        from kafka_pulse.clusters import load_or_default, resolve_cluster

        loading = time.monotonic()
        config = load_or_default(config_path, os.environ)
        cluster = resolve_cluster(config, cluster_name, dev_home())
        cluster_label, servers = cluster.name, tuple(cluster.bootstrap_servers)
        if deadline.remaining() < MIN_WORK_S:  # a huge config: probes asked now would all time out, a false CRIT
            raise BudgetSpent(
                f"loading the config took {time.monotonic() - loading:.1f} s of the {timeout_s:g} s budget, nothing "
                "was asked; give a larger --timeout or a smaller config"
            )
        sections = run_check(config, cluster, deadline, lag_source=_listener(lag_url, config, cluster.name, deadline))
    except BudgetSpent as exc:
        sections = (Section("budget", Status.UNKNOWN, "nothing checked", (str(exc),)),)
    except PulseError as exc:  # nothing to check: UNKNOWN, as Nagios plugins answer bad arguments
        why = redact_text(f"{type(exc).__name__}: {exc}")
        sections = (Section("config", Status.UNKNOWN, "nothing checked", (why,)),)
    report = Report(
        cluster=cluster_label,
        bootstrap_servers=servers,
        sections=sections,
        checked_at=datetime.now(UTC),
        elapsed_s=time.monotonic() - started,
        timeout_s=timeout_s,
    )
    from kafka_pulse.check.render import print_report, report_json

    if as_json:
        click.echo(json.dumps(report_json(report), indent=2))
    else:
        from rich.console import Console

        print_report(report, Console())
    if startup_s() is not None:
        # A process started for `check` ends here, without tearing down the clients of abandoned probes: destroying a
        # librdkafka client joins its broker threads, which a hung broker holds, and nothing else is left to save.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(report.status.exit_code)
    ctx.exit(report.status.exit_code)
