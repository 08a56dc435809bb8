"""`kafka-pulse lag` commands: `lag` runs the evaluator service for every configured cluster until SIGTERM/Ctrl-C;
`lag replay` feeds a recorded JSONL stream through the evaluator, with no Kafka."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

import click
import yaml
from click.core import ParameterSource

from devstack import dev_home
from kafka_pulse.cli.options import F, config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster
from kafka_pulse.runner.assembly import Assembly, add_alert_sink, add_lag, add_sli_sink, add_status
from lag import replay_lines
from pulse.alerts import AlertSink
from pulse.allocator import arrow_pool_settings, bound_malloc_arenas, skip_arrow_remote_filesystems
from pulse.config import LagConfig, LagMode, check_section, field_docs, load_config, split_host_port
from pulse.errors import ConfigError, PulseError
from pulse.lifecycle import configure_logging, run_until_signal
from pulse.paths import state_dir


class ReplayInputInvalid(PulseError):
    """Some lines of the replay input were malformed (each was reported with its line number and skipped)."""


@click.group(invoke_without_command=True)
@config_option
@click.option(
    "--cluster",
    "cluster_names",
    multiple=True,
    help="Only this configured cluster (repeatable; default: every configured cluster, else the dev cluster).",
)
@click.option("--listen", default=None, help="host:port of the API and /metrics (default: lag.listen, http.listen).")
@click.pass_context
def lag(ctx: click.Context, config_path: Path | None, cluster_names: tuple[str, ...], listen: str | None) -> None:
    """Evaluate consumer groups (Burrow-compatible) and serve the Burrow v3 API; `lag replay` replays a file.

    Without a subcommand, runs until SIGTERM or Ctrl-C: reads every configured cluster, serves the Burrow v3 API
    and /metrics, and (with lag.notify) opens and resolves incidents in Alertmanager.
    """
    if ctx.invoked_subcommand is not None:
        return
    bound_malloc_arenas(os.environ)  # before any thread: RSS then grows with the data, not the threads
    os.environ.update(arrow_pool_settings(os.environ))  # before pyarrow's import (the evaluation log's)
    skip_arrow_remote_filesystems(sys.modules)  # the same: the log writes local files, S3's library costs 2.8 MB
    configure_logging()
    config = load_or_default(config_path, os.environ)
    if not config.lag.enabled:
        raise ConfigError("lag.enabled is false: nothing to run (set it to true or leave it out)")
    if config.clusters:
        clusters = [config.cluster(n) for n in cluster_names] if cluster_names else list(config.clusters)
    else:
        clusters = [resolve_cluster(config, n, dev_home()) for n in (cluster_names or (None,))]
    if listen is not None:
        try:
            split_host_port(listen)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--listen") from None
    where = "--listen" if listen is not None else "lag.listen" if config.lag.listen is not None else "http.listen"
    assembly = Assembly(config.http, listen or config.lag.listen, where)
    sink = AlertSink.from_config(config.alerting, state_dir()) if config.lag.notify.enabled else None
    if sink is not None:
        add_alert_sink(assembly, sink)
    if config.sli_sink.enabled:
        sli_cluster = resolve_cluster(config, config.sli_sink.cluster, dev_home())
        add_sli_sink(assembly, config, sli_cluster, "lag", state_dir())
    add_lag(assembly, config, clusters, sink, state_dir())
    add_status(
        assembly, config, clusters, {"canary": "not run by `kafka-pulse lag`", "slo": "not run by `kafka-pulse lag`"}
    )
    names = ", ".join(c.name for c in clusters)

    def started() -> None:
        login = assembly.login_note
        urls = f"status page on {assembly.url}/{login}, Burrow v3 API on {assembly.url}/v3/kafka{login}, metrics on "
        urls += f"{assembly.url}/metrics{login}"
        click.echo(f"lag: evaluating {names} ({config.lag.mode} rules); {urls}", err=True)

    run_until_signal(assembly, started)
    click.echo("lag: stopped", err=True)


_REPLAY_SETTINGS: dict[str, str] = {
    "mode": "--mode",
    "intervals": "--intervals",
    "offset_refresh_s": "--offset-refresh",
    "min_distance_s": "--min-distance",
    "allowed_lag": "--allowed-lag",
    "minimum_complete": "--minimum-complete",
}
"""`lag:` settings `lag replay` takes as options (setting -> option): bounds and defaults come from `LagConfig`."""


class _YamlValue(click.ParamType[Any]):
    """An option value read as the config file reads the same key's value (YAML scalar: `1` int, `0.5` float), so the
    model sees, and words a refusal of, exactly what it would see in the file."""

    def __init__(self, name: str) -> None:
        self.name = name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return yaml.safe_load(value) if isinstance(value, str) else value


def _setting_option(field: str, kind: click.ParamType[Any], help_text: str | None = None) -> Callable[[F], F]:
    """An option for the `lag.<field>` setting: its default, shown in --help, and its help come from the model, and
    no bounds of its own (the model checks them), so the option cannot drift from the config key."""
    info = LagConfig.model_fields[field]
    return click.option(
        _REPLAY_SETTINGS[field],
        field,
        type=kind,
        default=info.default,
        show_default=True,
        help=f"{help_text or info.description or field_docs(LagConfig)[field]} Overrides lag.{field}.",
    )


def replay_settings(config_path: Path | None, given: Mapping[str, object]) -> LagConfig:
    """The `lag:` section of `--config` (defaults without one) with the options given on top, validated by the same
    model as the file; ConfigError names the option and the key as the file's loader would (`lag.intervals: ...`)."""
    base = load_config(config_path, os.environ).lag.model_dump(exclude_unset=True) if config_path else {}

    def source_of(loc: tuple[str | int, ...]) -> str:
        if loc and loc[0] in given:
            return _REPLAY_SETTINGS[str(loc[0])]
        return str(config_path) if config_path else "lag replay"

    return check_section(LagConfig, {**base, **given}, ("lag",), source_of)


@lag.command("replay")
@config_option
@click.option(
    "--input",
    "input_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSONL of broker/commit/evaluate lines ('-' for stdin).",
)
@_setting_option("mode", click.Choice(get_args(LagMode)))
@_setting_option("intervals", _YamlValue("INTEGER"), "Commits per window.")
@_setting_option(
    "offset_refresh_s", _YamlValue("SECONDS"), "HWM refresh interval in seconds (enhanced warm-up is intervals x this)."
)
@_setting_option(
    "min_distance_s",
    _YamlValue("SECONDS"),
    "Seconds; a commit closer than this to the previous one replaces it (Burrow's min-distance).",
)
@_setting_option("allowed_lag", _YamlValue("INTEGER"))
@_setting_option("minimum_complete", _YamlValue("RATIO"))
@click.pass_context
def replay_command(ctx: click.Context, /, config_path: Path | None, input_path: Path, **options: object) -> None:
    """Feed recorded offsets and commits (JSONL) through the evaluator, with no Kafka.

    Settings are the `lag:` section of --config (its defaults without one), each option overriding its key.
    Prints one JSON line per `evaluate` line: the `status` object of Burrow's /lag response at that time.
    """
    given = {k: v for k, v in options.items() if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE}
    settings = replay_settings(config_path, given)
    bad: list[int] = []

    def report(number: int, why: str) -> None:
        bad.append(number)
        click.echo(f"{input_path}:{number}: {why}", err=True)

    try:
        stream = sys.stdin if str(input_path) == "-" else input_path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--input {input_path}: {exc.strerror}") from exc
    with stream:
        for status in replay_lines(stream, settings, report):
            click.echo(json.dumps(status, separators=(",", ":")))
    if bad:
        raise ReplayInputInvalid(f"{len(bad)} malformed line(s) skipped in {input_path}: {bad[:10]}")
