"""SLO identity without Spark: an instance key names exactly one label set (a `group_by` value holding the key's
separator can no longer wear another instance's labels), and a label set repeated within one evaluation is
refused and counted, never published twice. The same through Spark: tests/integration/test_slo_identity.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]  # no stubs
import pytest

from slo.identity import identity, without_repeats
from slo.job import _results
from slo.model import Slo
from slo.sources import INSTANCE_SEPARATOR, REASONS, SourceUnreadable, instance_key, instance_labels
from slo.spec import parse_slos

T = datetime(2024, 4, 1, 0, 30, tzinfo=UTC)
SEP = INSTANCE_SEPARATOR


def slo(*group_by: str) -> Slo:
    entry = {"name": "x", "source": {"type": "events", "path": "/x"}, "good": "ok", "total": "n", "objective": 99.9}
    (found,) = parse_slos([("t", [entry | {"group_by": list(group_by)}])], Path("/"), check_sources=False)
    return found


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(("payments",), id="one-plain"),
        pytest.param((f"payments{SEP}x",), id="one-holding-the-separator"),
        pytest.param(("payments", "eu"), id="two-plain"),
        pytest.param((f"payments{SEP}x", "eu"), id="two-separator-in-first"),
        pytest.param(("payments", f"x{SEP}eu"), id="two-separator-in-second"),
        pytest.param(("a\\", "b"), id="trailing-backslash"),
        pytest.param(("a\\s", "b"), id="literal-backslash-s"),
        pytest.param(("", ""), id="empty-values"),
        pytest.param((SEP, SEP, "\\"), id="three-only-specials"),
    ],
)
def test_an_instance_key_gives_back_exactly_its_values(values: tuple[str, ...]) -> None:
    s = slo(*(f"l{i}" for i in range(len(values))))
    assert instance_labels(s, instance_key(values)) == {f"l{i}": v for i, v in enumerate(values)}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(("payments",), (f"payments{SEP}x",), id="one-label-the-issue-s-case"),
        pytest.param((f"a{SEP}b", "c"), ("a", f"b{SEP}c"), id="two-labels-shifted-separator"),
        pytest.param(("a\\", "b"), ("a", "\\b"), id="two-labels-backslashes"),
    ],
)
def test_different_values_never_share_a_key_or_labels(first: tuple[str, ...], second: tuple[str, ...]) -> None:
    s = slo(*(f"l{i}" for i in range(len(first))))
    assert instance_key(first) != instance_key(second)
    assert instance_labels(s, instance_key(first)) != instance_labels(s, instance_key(second))


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("only-one-value", id="too-few-values"),
        pytest.param(f"a{SEP}b{SEP}c", id="too-many-values"),
        pytest.param(f"a\\q{SEP}b", id="unknown-escape"),
        pytest.param(f"a\\{SEP}b", id="lone-backslash"),
    ],
)
def test_a_key_that_is_not_one_is_refused_not_split_into_someone_else_s_labels(key: str) -> None:
    with pytest.raises(SourceUnreadable, match="slo 'x': instance key"):
        instance_labels(slo("a", "b"), key)


def frame(instances: list[str], slo_index: int = 0) -> pd.DataFrame:
    """What the evaluation's Spark aggregation hands `_results`: one hour row per instance."""
    rows: list[dict[str, Any]] = []
    for instance in instances:
        row = {"slo": slo_index, "instance": instance, "k": 0, "good": 90.0, "total": 100.0, "p_good": 90.0}
        rows.append(row | {"p_total": 100.0, "good_300": 9.0, "total_300": 10.0, "good_1800": 9.0, "total_1800": 10.0})
        rows[-1] |= {f"n_{reason}": 0 for reason in REASONS}
    return pd.DataFrame(rows)


def test_a_group_holding_the_separator_gets_its_own_labels_in_an_evaluation() -> None:
    """The issue's case: a group named `payments<US>x` once got exactly the labels of `payments`."""
    s = slo("group")
    results = _results([s], T, frame(["payments", f"payments{SEP}x"]), [300, 1800])
    assert [r.labels for r in results] == [{"group": "payments"}, {"group": f"payments{SEP}x"}]
    assert [r.repeated_label_sets for r in results] == [0, 0]


def test_two_results_with_one_label_set_are_published_once_and_counted() -> None:
    """Two results that still come out with one name and label set (here one SLO handed over twice) are not both
    published: the second is refused and counted on the first (`repeated_label_sets`)."""
    s = slo("group")
    both = pd.concat([frame(["payments"], 0), frame(["payments"], 1)], ignore_index=True)
    results = _results([s, s], T, both, [300, 1800])
    assert [(r.name, r.labels, r.repeated_label_sets) for r in results] == [("x", {"group": "payments"}, 1)]


class R:
    def __init__(self, name: str, labels: dict[str, str]) -> None:
        self.name, self.labels = name, labels


@pytest.mark.parametrize(
    ("results", "kept", "refused"),
    [
        pytest.param([("s", {"g": "a"}), ("s", {"g": "b"})], [0, 1], [], id="distinct"),
        pytest.param([("s", {"g": "a"}), ("s", {"g": "a"})], [0], [("s", {"g": "a"}, 1)], id="same-labels"),
        pytest.param([("s", {}), ("s", {"g": ""})], [0], [("s", {}, 1)], id="empty-label-is-absent"),
        pytest.param([("s", {"g": "a"}), ("t", {"g": "a"})], [0, 1], [], id="other-slo"),
        pytest.param([("s", {"g": "a"})] * 3, [0], [("s", {"g": "a"}, 2)], id="three-times"),
    ],
)
def test_without_repeats(
    results: list[tuple[str, dict[str, str]]], kept: list[int], refused: list[tuple[str, dict[str, str], int]]
) -> None:
    objects = [R(name, labels) for name, labels in results]
    got_kept, got_refused = without_repeats(objects)
    assert got_kept == [objects[i] for i in kept]
    assert got_refused == {identity(name, labels): count for name, labels, count in refused}
