"""The figures one bench run emits for bench/compare.py: each keyed as in docs/benchmarks.md's committed-figures
table and written as JSON by the bench's `--figures-out FILE`, so a run is compared without parsing its printout.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, NamedTuple, cast

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
        """Also records the host's load at the end, so compare.py can say when a run's figures are doubtful."""
        if path is not None:
            body = {
                "bench": self.bench,
                "figures": [asdict(f) for f in self.figures],
                "load": os.getloadavg()[0],
                "cores": os.cpu_count(),
            }
            path.write_text(json.dumps(body, indent=2) + "\n")


class Run(NamedTuple):
    """A saved run: its bench, its figures, and the host's 1-minute load and cores when it ended (None if older)."""

    bench: str
    figures: list[Figure]
    load: float | None = None
    cores: int | None = None


def read_run(path: Path) -> Run:
    """A saved run, as FigureLog.write left it."""
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
    load, cores = body.get("load"), body.get("cores")
    return Run(
        str(body["bench"]), figures, None if load is None else float(load), None if cores is None else int(cores)
    )
