"""One SLO instance, one label set: the identity a result is published under (Prometheus gauges, Pushgateway,
Alertmanager), and the refusal of a second result with the same one in an evaluation, which would otherwise page
as another instance or keep its alert from resolving (docs/security.md, "SLO identity")."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

_LOG = logging.getLogger(__name__)
Identity = tuple[str, frozenset[tuple[str, str]]]


class Labelled(Protocol):
    """A result of one SLO instance: `SloResult`, `BacktestResult`, `InstanceMinutes`."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> dict[str, str]: ...


L = TypeVar("L", bound=Labelled)


def identity(name: str, labels: Mapping[str, str]) -> Identity:
    """What tells two results apart where they are published: the SLO's name and its non-empty labels (Prometheus
    and Alertmanager treat an empty label as absent)."""
    return name, frozenset((k, v) for k, v in labels.items() if v != "")


def without_repeats(results: Sequence[L]) -> tuple[list[L], dict[Identity, int]]:
    """(the results in order without any whose identity an earlier one holds, how many were refused per identity).
    Each refusal is logged; the first result of an identity is the one kept."""
    kept: list[L] = []
    seen: set[Identity] = set()
    refused: dict[Identity, int] = {}
    for result in results:
        key = identity(result.name, result.labels)
        if key in seen:
            refused[key] = refused.get(key, 0) + 1
            _LOG.warning(
                "SLO %r: a second instance with labels %s refused: one label set, one instance",
                result.name,
                dict(sorted(result.labels.items())),
            )
            continue
        seen.add(key)
        kept.append(result)
    return kept, refused
