"""The `kafka-pulse` entry point: the command tree, and the one place errors become exit codes."""

from __future__ import annotations

from typing import Any

import click

from pulse.cli import canary as canary_cli
from pulse.cli import check as check_cli
from pulse.cli import collect as collect_cli
from pulse.cli import dashboards as dashboards_cli
from pulse.cli import dev
from pulse.cli import lag as lag_cli
from pulse.cli import run as run_cli
from pulse.cli import slo as slo_cli
from pulse.errors import ConfigError, NotImplementedYet, PulseError


class PulseGroup(click.Group):
    """Prints a PulseError as `Type: message` on stderr, without a traceback, and exits non-zero."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PulseError as exc:
            click.echo(f"{type(exc).__name__}: {exc}", err=True)
            ctx.exit(2 if isinstance(exc, NotImplementedYet | ConfigError) else 1)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List every command path (`slo evaluate`, `dev up`, ...), not just the top-level groups."""
        rows = [(path, cmd.get_short_help_str(70)) for path, cmd in _walk(self, ctx.info_name or "")]
        with formatter.section("All commands"):
            formatter.write_dl(rows)


def _walk(group: click.Group, prefix: str) -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        path = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                out.append((path, command))
            out += _walk(command, path)
        else:
            out.append((path, command))
    return out


@click.group(cls=PulseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-pulse")
def cli() -> None:
    """kafka-pulse: monitoring and SLO alerting for Apache Kafka.

    Every command takes --config FILE; without one, commands use the local dev cluster (`dev up`).
    """


cli.add_command(dev.dev)
cli.add_command(collect_cli.collect)
cli.add_command(lag_cli.lag)
cli.add_command(canary_cli.canary)
for command in (
    run_cli.run,
    slo_cli.slo,
    dashboards_cli.dashboards,
    check_cli.check,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="kafka-pulse")


if __name__ == "__main__":
    main()
