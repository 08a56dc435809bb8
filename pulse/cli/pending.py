"""Commands that are part of the public CLI but whose issue has not landed: each says so and exits 2."""

from pathlib import Path

import click

from pulse.cli.options import config_option
from pulse.errors import NotImplementedYet


def _pending(command: str, issue: int, what: str) -> NotImplementedYet:
    return NotImplementedYet(f"`kafka-pulse {command}` ({what}) arrives with issue #{issue}, which has not landed yet")


@click.command()
@config_option
def run(config_path: Path | None) -> None:
    """Run collectors, canary and lag in one process with one /metrics, and the SLO job on a schedule."""
    raise _pending("run", 7, "the all-in-one service")


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True)
def check(config_path: Path | None, as_json: bool) -> None:
    """Is Kafka OK, and if not, what is wrong: exits 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN."""
    raise _pending("check", 7, "the health check")
