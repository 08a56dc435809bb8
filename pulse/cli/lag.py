"""`kafka-pulse lag` commands: `lag replay` feeds a recorded JSONL stream through the evaluator, with no Kafka."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from lag.replay import ReplaySettings, replay
from pulse.cli.options import config_option
from pulse.errors import ConfigError, NotImplementedYet, PulseError


class ReplayInputInvalid(PulseError):
    """Some lines of the replay input were malformed (each was reported with its line number and skipped)."""


@click.group(invoke_without_command=True)
@config_option
@click.pass_context
def lag(ctx: click.Context, config_path: Path | None) -> None:
    """Evaluate consumer groups (Burrow-compatible) and serve the Burrow v3 API; `lag replay` replays a file."""
    if ctx.invoked_subcommand is None:
        raise NotImplementedYet(
            "`kafka-pulse lag` (the lag evaluator service) arrives with issue #5, which has not landed yet; "
            "`kafka-pulse lag replay` has"
        )


@lag.command("replay")
@config_option
@click.option(
    "--input",
    "input_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSONL of broker/commit/evaluate lines ('-' for stdin).",
)
@click.option("--mode", type=click.Choice(["burrow", "burrow-1.2", "enhanced"]), default="enhanced", show_default=True)
@click.option("--intervals", type=click.IntRange(1, 255), default=10, show_default=True, help="Commits per window.")
@click.option(
    "--offset-refresh",
    "offset_refresh_s",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="HWM refresh interval in seconds (enhanced warm-up is intervals x this).",
)
@click.option(
    "--min-distance",
    "min_distance_s",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds; a commit closer than this to the previous one replaces it (Burrow's min-distance).",
)
@click.option("--allowed-lag", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--minimum-complete", type=click.FloatRange(0, 1), default=0.0, show_default=True)
def replay_command(
    config_path: Path | None,
    input_path: Path,
    mode: str,
    intervals: int,
    offset_refresh_s: float,
    min_distance_s: float,
    allowed_lag: int,
    minimum_complete: float,
) -> None:
    """Feed recorded offsets and commits (JSONL) through the evaluator, with no Kafka.

    Prints one JSON line per `evaluate` line: the `status` object of Burrow's /lag response at that time.
    """
    settings = ReplaySettings(
        mode=mode,  # type: ignore[arg-type]  # click.Choice guarantees a Mode
        intervals=intervals,
        offset_refresh_s=offset_refresh_s,
        min_distance_s=min_distance_s,
        allowed_lag=allowed_lag,
        minimum_complete=minimum_complete,
    )
    bad: list[int] = []

    def report(number: int, why: str) -> None:
        bad.append(number)
        click.echo(f"{input_path}:{number}: {why}", err=True)

    try:
        stream = sys.stdin if str(input_path) == "-" else input_path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--input {input_path}: {exc.strerror}") from exc
    with stream:
        for status in replay(stream, settings, report):
            click.echo(json.dumps(status, separators=(",", ":")))
    if bad:
        raise ReplayInputInvalid(f"{len(bad)} malformed line(s) skipped in {input_path}: {bad[:10]}")
