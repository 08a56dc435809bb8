"""The `kafka-pulse` entry point: the command tree, and the one place errors become exit codes."""

from __future__ import annotations

import importlib
import os
import traceback
from typing import Any

import click

from pulse.errors import ConfigError, PulseError
from pulse.lifecycle import guard_std_streams
from pulse.redact import redact_text

# kafka-pulse uses no pydantic plugin; looking for one reads every installed distribution's entry points when the
# first config model is built, about 25 ms of every command's start (`check` is CPU-bound on its start). An
# operator's own setting wins.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

COMMANDS = {
    "dev": "kafka_pulse.cli.dev:dev",
    "collect": "kafka_pulse.cli.collect:collect",
    "lag": "kafka_pulse.cli.lag:lag",
    "canary": "kafka_pulse.cli.canary:canary",
    "run": "kafka_pulse.cli.run:run",
    "slo": "kafka_pulse.cli.slo:slo",
    "dashboards": "kafka_pulse.cli.dashboards:dashboards",
    "check": "kafka_pulse.cli.check:check",
    "audit": "kafka_pulse.cli.audit:audit",
}
"""Command name -> `module:attribute`, imported when the command runs (or `--help` lists them all): `check` must
answer within seconds of the process's start, and importing every component costs most of a CPU second."""


class PulseGroup(click.Group):
    """Prints a PulseError as `Type: message` on stderr, without a traceback, and exits non-zero; anything else
    that escapes a command is printed with its traceback, exit 1. Both go through pulse/redact.py."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PulseError as exc:
            click.echo(redact_text(f"{type(exc).__name__}: {exc}"), err=True)
            ctx.exit(2 if isinstance(exc, ConfigError) else 1)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise
        except Exception:  # a bug: its traceback is wanted, but a URL with its login in it is not
            click.echo(redact_text(traceback.format_exc()), err=True)
            ctx.exit(1)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List every command path (`slo evaluate`, `dev up`, ...), not just the top-level groups."""
        rows = [(path, cmd.get_short_help_str(70)) for path, cmd in _walk(self, ctx, ctx.info_name or "")]
        with formatter.section("All commands"):
            formatter.write_dl(rows)


def _walk(group: click.Group, ctx: click.Context, prefix: str) -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        path = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                out.append((path, command))
            out += _walk(command, ctx, path)
        else:
            out.append((path, command))
    return out


@click.group(cls=PulseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-pulse")
def cli() -> None:
    """kafka-pulse: monitoring and SLO alerting for Apache Kafka.

    Every command takes --config FILE; without one, commands use the local dev cluster (`dev up`).
    """


def main() -> None:
    guard_std_streams()  # `kafka-pulse ... | head`: a closed pipe never aborts a command's teardown
    cli(prog_name="kafka-pulse")


if __name__ == "__main__":
    main()
