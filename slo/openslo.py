"""The accepted OpenSLO v1 subset, converted to our `slos:` entry form before validation.

Accepted: `kind: SLO` with a `ratioMetric` (good or bad, and total) whose `metricSource` is one of our sources
(`events`, `lag`, `audit`, `prometheus`), `timeWindow` rolling or calendar (1w, 1M), `budgetingMethod` Occurrences or
Timeslices (1-minute slices), `objectives[].target|targetPercent`, inline `alertPolicies` whose one condition is
`kind: burnrate` (long window = `lookbackWindow`, short = long / 12). `indicatorRef` may name an `SLI` document of
the same file. Other kinds (Service, DataSource, ...) are accepted as metadata and yield no SLO.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from pulse.envsubst import Loc
from slo.policy import MINUTE_S, format_duration, parse_duration_s
from slo.sql_allowlist import substitution_refusal

API_VERSION = "openslo/v1"
_METADATA_KINDS = {"Service", "DataSource", "AlertNotificationTarget", "SLI", "AlertPolicy", "AlertCondition"}


@dataclass
class Problems:
    """Why an OpenSLO document cannot be converted; locations are relative to the document."""

    items: list[tuple[Loc, str]] = field(default_factory=list)

    def add(self, loc: Loc, reason: str) -> None:
        self.items.append((loc, reason))


def is_openslo(entry: Any) -> bool:
    return isinstance(entry, Mapping) and "apiVersion" in entry


def resolve_references(entries: list[Any]) -> list[Any]:
    """Inline `indicatorRef: NAME` from the `SLI` documents among `entries`; positions stay the same."""
    slis = {
        e.get("metadata", {}).get("name"): e
        for e in entries
        if is_openslo(e) and e.get("kind") == "SLI" and isinstance(e.get("metadata"), Mapping)
    }
    out: list[Any] = []
    for entry in entries:
        spec = entry.get("spec") if is_openslo(entry) and entry.get("kind") == "SLO" else None
        if isinstance(spec, Mapping) and "indicatorRef" in spec and spec["indicatorRef"] in slis:
            spec = {k: v for k, v in spec.items() if k != "indicatorRef"}
            sli = slis[entry["spec"]["indicatorRef"]]
            spec["indicator"] = {"metadata": sli.get("metadata", {}), "spec": sli.get("spec", {})}
            entry = {**entry, "spec": spec}
        out.append(entry)
    return out


def convert_entry(entry: Any) -> list[Any] | Problems:
    """Our-form entries for one `slos:` item: itself when it is not OpenSLO, one per objective for an OpenSLO SLO,
    none for an OpenSLO metadata document."""
    if not is_openslo(entry):
        return [entry]
    problems = Problems()
    if entry.get("apiVersion") != API_VERSION:
        problems.add(("apiVersion",), f"{entry.get('apiVersion')!r} is not supported; use {API_VERSION}")
        return problems
    kind = entry.get("kind")
    if kind in _METADATA_KINDS:
        return []
    if kind != "SLO":
        problems.add(("kind",), f"{kind!r} is not an OpenSLO v1 kind this tool reads (SLO, SLI, Service, ...)")
        return problems
    converted = _convert_slo(entry, problems)
    return problems if problems.items else converted


def _convert_slo(doc: Mapping[str, Any], problems: Problems) -> list[dict[str, Any]]:
    metadata = doc.get("metadata") or {}
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        problems.add(("metadata", "name"), "required key is missing")
        name = "unnamed"
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        problems.add(("spec",), "required mapping is missing")
        return []
    base: dict[str, Any] = {"name": name, "description": str(spec.get("description", ""))}
    if isinstance(spec.get("service"), str):
        base["labels"] = {"service": spec["service"]}
    _convert_indicator(spec, base, problems)
    _convert_window(spec, base, problems)
    method = spec.get("budgetingMethod")
    if method not in ("Occurrences", "Timeslices"):
        problems.add(("spec", "budgetingMethod"), f"{method!r}: supported are Occurrences and Timeslices")
    alerting = _convert_alert_policies(spec, problems)
    if alerting is not None:
        base["alerting"] = alerting
    objectives = spec.get("objectives")
    if not isinstance(objectives, list) or not objectives:
        problems.add(("spec", "objectives"), "give at least one objective with a target")
        return []
    out: list[dict[str, Any]] = []
    for index, objective in enumerate(objectives):
        at: Loc = ("spec", "objectives", index)
        if not isinstance(objective, Mapping):
            problems.add(at, "must be a mapping with target or targetPercent")
            continue
        entry = dict(base)
        entry["objective"] = _target_percent(objective, at, problems)
        if len(objectives) > 1:
            suffix = str(objective.get("displayName") or index).lower().replace(" ", "-")
            entry["name"] = f"{name}-{suffix}"
        if method == "Timeslices":
            window = objective.get("timeSliceWindow", "1m")
            if str(window) not in ("1m", "1"):
                problems.add((*at, "timeSliceWindow"), f"{window!r}: only 1-minute slices are supported")
            target = _decimal(objective.get("timeSliceTarget", 1), (*at, "timeSliceTarget"), problems)
            if target is not None and not 0 < target <= 1:
                problems.add((*at, "timeSliceTarget"), f"{target} is not in (0, 1]")
            entry["budgeting"] = {"method": "timeslices", "slice_target": (target or Decimal(1)) * 100}
        out.append(entry)
    return out


def _decimal(value: Any, at: Loc, problems: Problems) -> Decimal | None:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        problems.add(at, f"{value!r} is not a number")
        return None


def _target_percent(objective: Mapping[str, Any], at: Loc, problems: Problems) -> Any:
    if "targetPercent" in objective:
        return objective["targetPercent"]
    if "target" not in objective:
        problems.add(at, "give target (0-1) or targetPercent (0-100)")
        return None
    target = _decimal(objective["target"], (*at, "target"), problems)
    if target is not None and not 0 < target < 1:
        problems.add((*at, "target"), f"{target} is not a ratio strictly between 0 and 1 (e.g. 0.999)")
    return None if target is None else target * 100


def _convert_indicator(spec: Mapping[str, Any], entry: dict[str, Any], problems: Problems) -> None:
    if "indicatorRef" in spec:
        problems.add(("spec", "indicatorRef"), f"no SLI document named {spec['indicatorRef']!r} in the same file")
        return
    indicator = spec.get("indicator")
    ratio = indicator.get("spec", {}).get("ratioMetric") if isinstance(indicator, Mapping) else None
    at: Loc = ("spec", "indicator", "spec", "ratioMetric")
    if not isinstance(ratio, Mapping):
        problems.add(at, "required: only ratioMetric indicators are supported (thresholdMetric and raw are not)")
        return
    queries: dict[str, str] = {}
    sources: dict[str, dict[str, Any]] = {}
    for key in ("good", "bad", "total"):
        if key not in ratio:
            continue
        source = ratio[key].get("metricSource") if isinstance(ratio[key], Mapping) else None
        if not isinstance(source, Mapping) or "metricSourceRef" in source:
            problems.add((*at, key, "metricSource"), "give an inline metricSource {type, spec} (refs are not read)")
            continue
        kind = str(source.get("type", "")).lower()
        source_spec = dict(source.get("spec") or {})
        query = source_spec.pop("query", None)
        if kind not in ("events", "lag", "audit", "prometheus"):
            problems.add(
                (*at, key, "metricSource", "type"), f"{source.get('type')!r}: use events, lag, audit or prometheus"
            )
            continue
        if not isinstance(query, str):
            problems.add((*at, key, "metricSource", "spec", "query"), "required: the Spark SQL or PromQL expression")
            continue
        if kind != "prometheus":  # Spark SQL: refused here, so that the message names the OpenSLO key
            for name, text in (("query", query), ("filter", source_spec.get("filter"))):
                if isinstance(text, str) and (why := substitution_refusal(text)) is not None:
                    problems.add((*at, key, "metricSource", "spec", name), why)
        queries[key] = query
        sources[key] = {"type": kind, **source_spec}
    if "total" not in ratio or ("good" in ratio) == ("bad" in ratio):
        problems.add(at, "give total and exactly one of good or bad")
        return
    if len(queries) < 2:
        return
    first, *rest = sources.values()
    if any(other != first for other in rest):
        problems.add(at, "good/bad and total must read the same metricSource (same type and spec)")
        return
    entry["source"] = first
    entry["total"] = queries["total"]
    entry["good"] = queries["good"] if "good" in queries else f"({queries['total']}) - ({queries['bad']})"


def _convert_window(spec: Mapping[str, Any], entry: dict[str, Any], problems: Problems) -> None:
    windows = spec.get("timeWindow")
    if not isinstance(windows, list) or len(windows) != 1 or not isinstance(windows[0], Mapping):
        problems.add(("spec", "timeWindow"), "give exactly one time window")
        return
    window = windows[0]
    duration = str(window.get("duration", ""))
    if window.get("isRolling", False):
        entry["window"] = duration
        return
    calendar = window.get("calendar")
    if not isinstance(calendar, Mapping):
        calendar = {}
    if duration not in ("1w", "1M"):
        problems.add(("spec", "timeWindow", 0, "duration"), f"{duration!r}: calendar windows may be 1w or 1M")
        return
    entry["window"] = {"calendar": duration, "timezone": calendar.get("timeZone", "UTC")}


def _convert_alert_policies(spec: Mapping[str, Any], problems: Problems) -> dict[str, Any] | None:
    policies = spec.get("alertPolicies")
    if policies is None:
        return None
    tiers: dict[str, list[dict[str, Any]]] = {"page": [], "ticket": []}
    for index, policy in enumerate(policies if isinstance(policies, list) else []):
        at: Loc = ("spec", "alertPolicies", index)
        conditions = policy.get("spec", {}).get("conditions") if isinstance(policy, Mapping) else None
        if not isinstance(conditions, list) or len(conditions) != 1 or not isinstance(conditions[0], Mapping):
            problems.add(at, "give an inline AlertPolicy with exactly one inline condition")
            continue
        condition_doc = conditions[0]
        condition_spec = condition_doc.get("spec", condition_doc)
        condition = condition_spec.get("condition", {}) if isinstance(condition_spec, Mapping) else {}
        where: Loc = (*at, "spec", "conditions", 0)
        if condition.get("kind") != "burnrate" or condition.get("op") not in ("gt", "gte"):
            problems.add(where, "only `kind: burnrate` conditions with op gt/gte are supported")
            continue
        try:
            long_s = parse_duration_s(str(condition.get("lookbackWindow", "")))
        except ValueError as exc:
            problems.add((*where, "condition", "lookbackWindow"), str(exc))
            continue
        short_s = max(MINUTE_S, (long_s // 12) // MINUTE_S * MINUTE_S)
        severity = str(condition_spec.get("severity", "")).lower()
        tier = "page" if severity in ("page", "critical") else "ticket"
        tiers[tier].append(
            {
                "long": format_duration(long_s),
                "short": format_duration(short_s),
                "factor": condition.get("threshold"),
            }
        )
    return {tier: ({"windows": pairs} if pairs else {"disabled": True}) for tier, pairs in tiers.items()}
