"""The SLO spec (YAML `slos:` entries, or OpenSLO v1 documents) -> validated `slo.model.Slo`s, before Spark starts.

Every problem of every SLO is reported in one pass with its key path (`slos[2].objective: ...`). Spark SQL
expressions are checked with sqlglot's Spark dialect (pure Python, so no JVM is needed to refuse a bad spec);
column names are checked against the source's Parquet schema read with pyarrow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlglot
from pydantic import ValidationError
from sqlglot import exp

from pulse.config import (
    AlertTierSpec,
    BurnWindowSpec,
    CalendarWindowSpec,
    EventsSourceSpec,
    HttpClientConfig,
    PulseConfig,
    SloSpec,
    TimesliceSpec,
)
from pulse.envsubst import Loc, describe_error, format_key_path, read_tree
from pulse.errors import ConfigError
from slo import model, openslo
from slo.policy import (
    CALENDAR_NOMINAL_S,
    HOUR_S,
    MINUTE_S,
    burn_factor,
    can_ever_fire,
    error_budget,
    format_duration,
    parse_duration_s,
    threshold,
)
from slo.source_columns import source_problems
from slo.sql_allowlist import expression_refusals, substitution_refusal


class InvalidSpec(ConfigError):
    """An SLO spec is refused; the message lists every problem with its key path."""


# --- YAML shape -----------------------------------------------------------------------------------------------


DEFAULT_PAIRS: dict[str, tuple[tuple[str, str, int], ...]] = {
    "page": (("1h", "5m", 2), ("6h", "30m", 5)),
    "ticket": (("1d", "2h", 10), ("3d", "6h", 10)),
}
"""(long, short, percent of the budget): 14.4x, 6x, 3x and 1x over a 30-day window (SRE Workbook table 5-8; Sloth's
`internal/alert/windows/google-30d.yaml`)."""


# --- checks -----------------------------------------------------------------------------------------------------


def _window_of(spec: SloSpec) -> model.Window:
    if isinstance(spec.window, CalendarWindowSpec):
        unit = spec.window.calendar
        return model.CalendarWindow(unit, spec.window.timezone, CALENDAR_NOMINAL_S[unit])
    return model.RollingWindow(parse_duration_s(spec.window))


def _nominal_period_s(window: model.Window) -> int:
    return window.period_s if isinstance(window, model.RollingWindow) else window.nominal_s


def _check_slo(spec: SloSpec) -> list[tuple[Loc, str]]:
    """Rules no single field can check, each reported at the key that breaks it."""
    problems: list[tuple[Loc, str]] = []
    period_s: int | None = None
    if isinstance(spec.window, str):
        try:
            period_s = parse_duration_s(spec.window)
        except ValueError as exc:
            problems.append((("window",), f"{exc}, or {{calendar: 1M, timezone: UTC}}"))
        else:
            if period_s % HOUR_S or period_s < HOUR_S:
                problems.append((("window",), f"{spec.window!r}: a rolling window must be a whole number of hours"))
                period_s = None
    else:
        period_s = CALENDAR_NOMINAL_S[spec.window.calendar]
    try:
        forecast_s = parse_duration_s(spec.alerting.forecast_window)
        if forecast_s % MINUTE_S or forecast_s < MINUTE_S:
            problems.append((("alerting", "forecast_window"), "must be a whole number of minutes"))
    except ValueError as exc:
        problems.append((("alerting", "forecast_window"), str(exc)))
    budget = error_budget(spec.objective)
    for severity in ("page", "ticket"):
        tier: AlertTierSpec = getattr(spec.alerting, severity)
        if tier.windows is None or tier.disabled:
            continue
        for index, pair in enumerate(tier.windows):
            at: Loc = ("alerting", severity, "windows", index)
            problems += _check_pair(pair, at, budget, period_s)
    if period_s is not None:
        for severity, defaults in DEFAULT_PAIRS.items():
            tier = getattr(spec.alerting, severity)
            if tier.windows is None and not tier.disabled:
                for long, short, percent in defaults:
                    default = BurnWindowSpec(long=long, short=short, budget_percent=Decimal(percent))
                    found = _check_pair(default, ("alerting", severity), budget, period_s)
                    problems += [(loc, f"default pair {long}/{short}: {why}") for loc, why in found]
    if isinstance(spec.source, EventsSourceSpec):
        if not spec.source.path.strip():
            problems.append((("source", "path"), "is empty; give the directory of the Parquet SLI event log"))
        for key in ("good", "total"):
            problems += [((key,), why) for why in _sql_problems(getattr(spec, key))]
        if spec.source.filter is not None:
            problems += [(("source", "filter"), why) for why in _sql_problems(spec.source.filter)]
    else:
        for key in ("good", "total"):
            if not getattr(spec, key).strip():
                problems.append(((key,), "is empty; give a PromQL expression"))
        if spec.group_by:
            problems.append((("group_by",), "is only supported for Parquet sources; use `by` in the PromQL instead"))
    return problems


def _check_pair(pair: BurnWindowSpec, at: Loc, budget: Fraction, period_s: int | None) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []
    sizes: dict[str, int] = {}
    for key in ("long", "short"):
        try:
            sizes[key] = parse_duration_s(getattr(pair, key))
        except ValueError as exc:
            problems.append(((*at, key), str(exc)))
            continue
        if sizes[key] % MINUTE_S or sizes[key] < MINUTE_S:
            problems.append(((*at, key), f"{getattr(pair, key)!r} must be a whole number of minutes"))
    if len(sizes) < 2 or problems:
        return problems
    long_s, short_s = sizes["long"], sizes["short"]
    if short_s >= long_s:
        problems.append(((*at, "short"), f"{pair.short} is not shorter than the long window {pair.long}"))
    if period_s is not None and long_s > period_s:
        problems.append(((*at, "long"), f"{pair.long} is longer than the SLO window {format_duration(period_s)}"))
    if period_s is not None:
        factor = _factor(pair, period_s, long_s)
        if not can_ever_fire(factor, budget):
            limit = threshold(factor, budget)
            problems.append(
                (
                    at,
                    f"burn factor {float(factor):g} x error budget {float(budget):g} = {float(limit):g} >= 1: the "
                    "error ratio can never exceed it, so this alert can never fire; lower the factor or "
                    "budget_percent, or raise the objective",
                )
            )
    return problems


def _factor(pair: BurnWindowSpec, period_s: int, long_s: int) -> Fraction:
    if pair.factor is not None:
        return Fraction(pair.factor)
    assert pair.budget_percent is not None
    return burn_factor(Fraction(pair.budget_percent) / 100, period_s, long_s)


_STATEMENTS = (exp.Query, exp.DDL, exp.DML, exp.Command, exp.Block)


def _sql_problems(text: str) -> list[str]:
    """Why `text` is not a row-level Spark SQL expression, checked with sqlglot's Spark dialect."""
    if not text.strip():
        return ["is empty; give a Spark SQL expression such as `true` or `produce_ok`"]
    if (refusal := substitution_refusal(text)) is not None:
        return [refusal]
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at column {first['col']}" if "col" in first else ""
        what = first.get("description", str(exc)).split(" for <class")[0]
        return [f"{text!r} is not a Spark SQL expression{where}: {what}"]
    except sqlglot.errors.SqlglotError as exc:
        return [f"{text!r} is not a Spark SQL expression: {exc}"]
    if isinstance(tree, _STATEMENTS):
        return [f"{text!r} is a statement; give an expression over one row, e.g. `produce_ok AND latency_ms < 100`"]
    if tree.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Select) is not None:
        return [f"{text!r} aggregates or queries; give an expression over one row (the job sums it per window)"]
    return expression_refusals(tree)  # Spark SQL can reach the JVM (reflect, java_method): only what an SLI needs


# --- building the model ---------------------------------------------------------------------------------------


def to_model(spec: SloSpec, base_dir: Path | None) -> model.Slo:
    """The validated spec as the job's dataclass; relative source paths are taken from `base_dir`."""
    window = _window_of(spec)
    period_s = _nominal_period_s(window)
    pairs: list[model.BurnPair] = []
    for severity in ("page", "ticket"):
        tier: AlertTierSpec = getattr(spec.alerting, severity)
        if tier.disabled:
            continue
        windows = tier.windows
        if windows is None:
            windows = [
                BurnWindowSpec(long=long, short=short, budget_percent=Decimal(p))
                for long, short, p in DEFAULT_PAIRS[severity]
            ]
        for pair in windows:
            long_s, short_s = parse_duration_s(pair.long), parse_duration_s(pair.short)
            pairs.append(model.BurnPair(severity, long_s, short_s, _factor(pair, period_s, long_s)))
    source: model.Source
    if isinstance(spec.source, EventsSourceSpec):
        path = Path(spec.source.path)
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        source = model.EventsSource(spec.source.type, path, spec.source.filter)
    else:
        src = spec.source
        login = None
        if src.basic_auth is not None or src.bearer_token is not None or src.ca_file is not None:
            login = HttpClientConfig.model_construct(  # already validated with the source
                basic_auth=src.basic_auth, bearer_token=src.bearer_token, ca_file=src.ca_file
            )
        source = model.PrometheusSource(src.url, src.timeout_s, login)
    target = None
    if isinstance(spec.budgeting, TimesliceSpec):
        target = Fraction(spec.budgeting.slice_target) / 100
    return model.Slo(
        name=spec.name,
        description=spec.description,
        labels=dict(spec.labels),
        source=source,
        good=spec.good,
        total=spec.total,
        objective=Fraction(spec.objective),
        window=window,
        pairs=tuple(pairs),
        min_events=spec.alerting.min_events,
        forecast_s=parse_duration_s(spec.alerting.forecast_window),
        timeslice_target=target,
        group_by=tuple(spec.group_by),
    )


# --- loading --------------------------------------------------------------------------------------------------


def _parse(
    entries: Sequence[Any],
    where: str,
    base_dir: Path | None,
    check_sources: bool,
    names: list[tuple[str, str]],
    streamed: Mapping[str, pa.Schema] | None = None,
) -> tuple[list[model.Slo], list[str]]:
    """The valid entries' SLOs, and a line per problem of the others; appends (key path, name) to `names`."""
    problems: list[str] = []
    slos: list[model.Slo] = []
    for index, entry in enumerate(entries):
        prefix: Loc = ("slos", index)
        converted = openslo.convert_entry(entry)
        if isinstance(converted, openslo.Problems):
            problems += [f"{where}: {format_key_path((*prefix, *loc))}: {why}" for loc, why in converted.items]
            continue
        for item in converted:
            name = item.name if isinstance(item, SloSpec) else item.get("name") if isinstance(item, Mapping) else None
            if isinstance(name, str):
                names.append((f"{where}: {format_key_path((*prefix, 'name'))}", name))
            try:
                spec = SloSpec.model_validate(item)
            except ValidationError as exc:
                for error in exc.errors(include_url=False):
                    loc, reason = describe_error(error, SloSpec)
                    problems.append(f"{where}: {format_key_path((*prefix, *loc))}: {reason}")
                continue
            found = _check_slo(spec)
            if not found:
                slo = to_model(spec, base_dir)
                found = source_problems(slo, streamed) if check_sources else []
                if not found:
                    slos.append(slo)
            problems += [f"{where}: {format_key_path((*prefix, *loc))}: {why}" for loc, why in found]
    return slos, problems


def parse_slos(
    groups: Sequence[tuple[str, Sequence[Any]]],
    base_dir: Path | None,
    check_sources: bool = True,
    base_dirs: Mapping[str, Path] | None = None,
    streamed: Mapping[str, pa.Schema] | None = None,
) -> list[model.Slo]:
    """Validate groups of `slos:` entries (our form or OpenSLO v1), each named by where it comes from (the config
    file, a spec file); InvalidSpec lists every problem, one a line, as `<where>: slos[i].key: reason`. Relative
    source paths are taken from `base_dirs[where]`, else from `base_dir`; `streamed` as for `source_problems`."""
    problems: list[str] = []
    slos: list[model.Slo] = []
    names: list[tuple[str, str]] = []
    for where, entries in groups:
        directory = (base_dirs or {}).get(where, base_dir)
        resolved = openslo.resolve_references(list(entries))
        found, wrong = _parse(resolved, where, directory, check_sources, names, streamed)
        slos += found
        problems += wrong
    first: dict[str, str] = {}
    for at, name in names:
        if name in first:
            problems.append(f"{at}: duplicate SLO name {name!r} (also {first[name].split(': ')[-1]})")
        first.setdefault(name, at)
    if problems:
        raise InvalidSpec("\n".join(problems))
    return slos


def read_spec_file(path: Path) -> list[Any]:
    """The `slos:` entries of a spec file: a mapping with `slos:`, or one or more OpenSLO documents (`---`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidSpec(f"{path}: cannot read SLO spec: {exc.strerror or exc}") from None
    entries: list[Any] = []
    for document in re.split(r"(?m)^---\s*$", text):
        if not document.strip():
            continue
        tree = read_tree(document, str(path))
        if "apiVersion" in tree:
            entries.append(tree)
        elif set(tree) <= {"slos"}:
            entries += list(tree.get("slos") or [])
        else:
            extra = ", ".join(sorted(map(str, set(tree) - {"slos"})))
            raise InvalidSpec(f"{path}: unknown top-level key(s) {extra}; an SLO spec file holds `slos:` or OpenSLO")
    return entries


def load_slos(
    config: PulseConfig,
    config_source: str,
    base_dir: Path | None,
    check_sources: bool = True,
    streamed: Mapping[str, pa.Schema] | None = None,
) -> list[model.Slo]:
    """Every SLO of a config: the inline `slos:` and those of the `slo.spec` file, validated together; relative
    source paths are relative to the file that names them. `check_sources=False` skips reading the event sources'
    Parquet schemas (rule generation must not need the directories of SLOs it skips); `streamed` (kind -> schema
    on Kafka) checks the streamed kinds' columns against those schemas instead."""
    groups: list[tuple[str, Sequence[Any]]] = []
    dirs: dict[str, Path] = {}
    if config.slos:
        groups.append((config_source, config.slos))
    if config.slo.spec is not None:
        groups.append((str(config.slo.spec), read_spec_file(config.slo.spec)))
        dirs[str(config.slo.spec)] = config.slo.spec.parent
    if not any(entries for _, entries in groups):
        raise InvalidSpec(f"{config_source}: no SLOs: add entries under `slos:` or point `slo.spec` at a spec file")
    return parse_slos(groups, base_dir, check_sources=check_sources, base_dirs=dirs, streamed=streamed)


def describe(slos: Iterable[model.Slo]) -> Mapping[str, str]:
    """name -> one line (window, objective, pairs), for logs."""
    return {
        s.name: f"{float(s.objective):g}% over {s.window.label}; "
        + ", ".join(f"{p.severity} {p.name} {float(p.factor):g}x" for p in s.pairs)
        for s in slos
    }
