"""The figures one bench run emits for bench/compare.py: each keyed as in docs/benchmarks.md's committed-figures
table and written as JSON by the bench's `--figures-out FILE`, so a run is compared without parsing its printout.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, cast

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Figure:
    """One figure of one run: ours, and the peer's measured in the same run when the figure has a peer."""

    key: str
    at: str  # the scale it was measured at ("2000/s", "100000x10"): a figure compares only at the same scale
    value: float
    unit: str
    better: Better = "lower"
    peer: float | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.peer is None or self.peer == 0 else self.value / self.peer


class FigureLog:
    """Collects a bench's figures while it prints them; `write` is a no-op without `--figures-out`."""

    def __init__(self, bench: str) -> None:
        self.bench = bench
        self.figures: list[Figure] = []

    def add(
        self, key: str, at: str, value: float, unit: str, better: Better = "lower", peer: float | None = None
    ) -> None:
        self.figures.append(Figure(key, at, value, unit, better, peer))

    def write(self, path: Path | None) -> None:
        if path is not None:
            body = {"bench": self.bench, "figures": [asdict(f) for f in self.figures]}
            path.write_text(json.dumps(body, indent=2) + "\n")


def read_run(path: Path) -> tuple[str, list[Figure]]:
    """A saved run: its bench's name and its figures."""
    body = json.loads(path.read_text())
    figures = [
        Figure(
            key=str(f["key"]),
            at=str(f["at"]),
            value=float(f["value"]),
            unit=str(f["unit"]),
            better=cast(Better, f.get("better", "lower")),
            peer=None if f.get("peer") is None else float(f["peer"]),
        )
        for f in body["figures"]
    ]
    return str(body["bench"]), figures
