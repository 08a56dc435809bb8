"""The steps the `slo` commands share (kafka_pulse/cli/slo.py and slo_stream.py): the spec loaded and validated
before Spark starts, times parsed as options, results printed."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kafka_pulse.clusters import load_or_default

if TYPE_CHECKING:
    from pulse.config import SloConfig
    from slo import Slo, SloResult


def parse_time(text: str | None, option: str) -> datetime:
    """ISO 8601 (`2024-03-01T12:00:00Z`; a time without zone is UTC) or `now`."""
    if text is None or text == "now":
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        reason = f"{text!r} is not an ISO 8601 time, e.g. 2024-03-01T12:00:00Z"
        raise click.BadParameter(reason, param_hint=option) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def load_spec(config_path: Path | None, streamed: bool = False) -> tuple[list[Slo], SloConfig]:
    """Validated SLOs and the `slo:` section; raises InvalidSpec before anything starts Spark. `streamed`: the
    SLOs are read from the SLI sink's topics, so their columns are checked against the rows there, not Parquet."""
    from slo import load_slos

    config = load_or_default(config_path, os.environ)
    source = str(config_path) if config_path is not None else "config"
    base_dir = config_path.parent if config_path is not None else Path.cwd()
    schemas = None
    if streamed:
        from kafka_pulse.runner.slo_stream import sink_topics

        schemas = {kind: topic.schema for kind, topic in sink_topics(config).items()}
    return load_slos(config, source, base_dir, streamed=schemas), config.slo


def print_results(results: Sequence[SloResult], as_json: bool) -> None:
    from slo import iso

    if as_json:
        click.echo(json.dumps({"slos": [r.to_json() for r in results]}, indent=2))
        return
    for r in results:
        firing = [a.severity for a in r.alerts if a.firing] or ["none"]
        sli = "no data" if r.sli is None else f"{r.sli * 100:.4f}%"
        remaining = "-" if r.budget_remaining is None else f"{r.budget_remaining * 100:.1f}%"
        labels = "".join(f" {k}={v}" for k, v in sorted(r.labels.items()))
        click.echo(
            f"{r.name}{labels}: SLI {sli} (objective {r.objective:g}% over {r.window}), budget left {remaining}, "
            f"firing: {', '.join(firing)}, exhaustion: {iso(r.exhaustion_at) or 'none'}"
        )
