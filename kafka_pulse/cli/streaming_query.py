"""The loop of the streaming commands (`slo stream`, `audit reconcile`): a Structured Streaming query run until
SIGTERM or Ctrl-C, reported on every trigger, and always stopped, so its checkpoint is closed and the exit is 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from pulse.lifecycle import stop_on_signals, wait_stopped

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery


def run_until_stopped(
    command: str, start: Callable[[], StreamingQuery], every_s: float, report: Callable[[StreamingQuery], None]
) -> None:
    """Start the query, call `report` every `every_s` while it runs, stop it on a signal; a query that failed on its
    own is a ClickException naming its first line."""
    with stop_on_signals() as stopped:  # SIGTERM as Ctrl-C: the query stopped, its checkpoint closed, exit 0
        query = start()
        click.echo(f"{command}: running until SIGTERM or Ctrl-C", err=True)
        try:
            while not wait_stopped(stopped, every_s):
                if query.exception() is not None or not query.isActive:
                    break
                report(query)
        finally:
            query.stop()
    failure = query.exception()
    if failure is not None:
        raise click.ClickException(f"{command} stopped: {str(failure).splitlines()[0]}")
