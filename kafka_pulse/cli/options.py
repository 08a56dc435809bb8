"""Options every command shares, so `--config FILE` means the same thing everywhere."""

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def config_option(func: F) -> F:
    """`--config FILE`: the YAML config; without it, commands use the local dev cluster."""
    option = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        envvar="KAFKA_PULSE_CONFIG",
        help="YAML config file (default: $KAFKA_PULSE_CONFIG, else the local dev cluster).",
    )
    return option(func)
