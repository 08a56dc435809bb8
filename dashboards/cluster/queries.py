"""The cluster dashboard's label selectors (its `$cluster` and `$broker` variables) and the per-broker aggregations its
rows are built from, declared once for every row module."""

from __future__ import annotations

from dashboards.grafana import RATE

C = 'cluster="$cluster"'
CB = 'cluster="$cluster", broker=~"$broker"'
ALL_TOPICS = 'cluster="$cluster", broker=~"$broker", topic=""'
"""The all-topics meters: their series carry no `topic` label, which `topic=""` selects."""


def per_broker(metric: str, selector: str = CB, how: str = "sum") -> str:
    return f"{how} by (broker) ({metric}{{{selector}}})"


def rate_per_broker(metric: str, selector: str = CB) -> str:
    return f"sum by (broker) (rate({metric}{{{selector}}}{RATE}))"
