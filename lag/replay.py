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
from typing import Any, TypeGuard

from lag.serve.burrow_json import Json, group_status_json
from lag.service import new_evaluator
from pulse.config import LagConfig

_FIELDS: dict[str, tuple[str, ...]] = {
    "broker": ("cluster", "topic", "partition", "offset"),
    "commit": ("cluster", "group", "topic", "partition", "offset"),
    "evaluate": ("cluster", "group"),
}
_INTS = frozenset({"partition", "offset"})


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


def replay_lines(lines: Iterable[str], settings: LagConfig, on_error: Callable[[int, str], None]) -> Iterator[Json]:
    """Apply the lines in order through an evaluator built as the service builds its own; yield one status object per
    `evaluate`; report bad lines as (line number, why)."""
    evaluator = new_evaluator(settings)
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
