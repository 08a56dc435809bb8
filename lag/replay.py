"""Replay: a recorded stream of HWM samples and commits (JSONL) fed through the same store and evaluator, no Kafka.

Input, one JSON object a line, `t` in ms since the epoch (it is also the clock of the line):
    {"t": MS, "type": "broker",   "cluster": C, "topic": T, "partition": P, "offset": O}
    {"t": MS, "type": "commit",   "cluster": C, "group": G, "topic": T, "partition": P, "offset": O}
    {"t": MS, "type": "evaluate", "cluster": C, "group": G}
Every `evaluate` yields the `status` object of Burrow's `/lag` response evaluated at `t`. A malformed line is
reported with its line number and skipped, so one bad line does not hide an incident's other evaluations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from lag.burrow_json import Json, group_status_json
from lag.evaluator import Evaluator
from lag.rules import RuleParams
from lag.status import Mode
from lag.store import OffsetStore

_FIELDS: dict[str, tuple[str, ...]] = {
    "broker": ("cluster", "topic", "partition", "offset"),
    "commit": ("cluster", "group", "topic", "partition", "offset"),
    "evaluate": ("cluster", "group"),
}
_INTS = frozenset({"partition", "offset"})


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """The replay CLI's options, with Burrow's defaults (`intervals` 10, `min-distance` 0, `offset-refresh` 10 s)."""

    mode: Mode = "enhanced"
    intervals: int = 10
    offset_refresh_s: float = 10.0
    min_distance_s: float = 0.0
    allowed_lag: int = 0
    minimum_complete: float = 0.0
    expire_group_s: float = 604_800.0
    hwm_history: int = 60
    """HWM samples kept per partition for time lag and enhanced rules; burrow rules read the newest `intervals`."""

    def evaluator(self) -> Evaluator:
        store = OffsetStore(
            intervals=self.intervals,
            min_distance_ms=round(self.min_distance_s * 1000),
            hwm_capacity=self.hwm_history,
            expire_group_ms=round(self.expire_group_s * 1000),
        )
        params = RuleParams(
            mode=self.mode,
            intervals=self.intervals,
            allowed_lag=self.allowed_lag,
            minimum_complete=self.minimum_complete,
            offset_refresh_ms=round(self.offset_refresh_s * 1000),
        )
        return Evaluator(store, params)


class MalformedLine(ValueError):
    """One input line could not be used; `str()` says why."""


def parse_line(text: str) -> dict[str, Any]:
    """Validate one line; raises MalformedLine naming the field and the rule."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedLine(f"not JSON: {exc.msg} at column {exc.colno}") from exc
    if not isinstance(record, dict):
        raise MalformedLine(f"expected a JSON object, got {type(record).__name__}")
    kind = record.get("type")
    if kind not in _FIELDS:
        raise MalformedLine(f"'type' must be one of broker, commit, evaluate, got {kind!r}")
    t = record.get("t")
    if not _is_int(t) or t < 0:
        raise MalformedLine(f"'t' must be a non-negative integer (ms since the epoch), got {t!r}")
    for name in _FIELDS[kind]:
        if name not in record:
            raise MalformedLine(f"{kind} line without '{name}'")
        value = record[name]
        if name in _INTS:
            if not _is_int(value) or value < 0:
                raise MalformedLine(f"'{name}' must be a non-negative integer, got {value!r}")
        elif not isinstance(value, str) or not value:
            raise MalformedLine(f"'{name}' must be a non-empty string, got {value!r}")
    return record


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def replay(lines: Iterable[str], settings: ReplaySettings, on_error: Callable[[int, str], None]) -> Iterator[Json]:
    """Apply the lines in order; yield one status object per `evaluate`; report bad lines as (line number, why)."""
    evaluator = settings.evaluator()
    store = evaluator.store
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            r = parse_line(text)
        except MalformedLine as exc:
            on_error(number, str(exc))
            continue
        kind, t, cluster = r["type"], r["t"], r["cluster"]
        if kind == "broker":
            store.add_hwm(cluster, r["topic"], r["partition"], r["offset"], t)
        elif kind == "commit":
            store.add_commit(cluster, r["group"], r["topic"], r["partition"], r["offset"], t, now_ms=t)
        else:
            yield group_status_json(evaluator.evaluate_group(cluster, r["group"], t), settings.mode)
