"""Running sums of minute buckets per SLO instance (pure): any window's sums are two lookups, so an evaluation costs
one lookup per hour of the window per instance, whatever the number of events or minutes in it.

Per instance a ring of the last `capacity` minutes holds each minute's latest values and the cumulative sums
through it. A new minute extends the sums (gaps copy the last sum); a late bucket of a minute already summed adds
its change to the sums after it, which the watermark bounds to a few minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from slo.policy import FloatArray

COLUMNS = ("rows", "good", "total", "n_bad_value", "n_good_exceeds_total", "unit_good", "unit_total")
"""What is summed per minute: the bucket's values, then good and total in budget units (a timeslice SLO's minute
is one slice, good or not; otherwise the same as good and total)."""


@dataclass
class _Instance:
    cum: np.ndarray
    """Per slot (minute % capacity, at row `RunningSums._row[slot]`): the sums of every minute up to and including
    that minute, since the instance was first seen; a minute's own values are the difference with the slot
    before."""
    last: int
    """The newest minute summed; every minute in (last - capacity, last] has its slot."""


class RunningSums:
    """Cumulative sums per key over a ring of `capacity` minutes (float64: counts stay exact up to 2^53)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(2, capacity)
        self._keys: dict[tuple[str, str], _Instance] = {}
        slots = np.arange(self.capacity)
        self._hours = self.capacity // 60 if self.capacity % 60 == 0 else 0
        self._row = (slots % 60) * self._hours + slots // 60 if self._hours else slots
        """The row of each slot. A ring of whole hours keeps the minutes an hour apart in adjacent rows (slot s at
        (s % 60) x hours + s // 60), so an evaluation's hourly lookups read one block, not a row per 3 kB."""

    def instances(self) -> list[tuple[str, str]]:
        return sorted(self._keys)

    def set(self, key: tuple[str, str], minute: int, values: FloatArray) -> None:
        """The latest values of `minute` (epoch minutes), replacing what it held; a minute as old as the ring or
        older is ignored."""
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = _Instance(np.zeros((self.capacity, len(COLUMNS))), minute - 1)
        if minute > found.last:
            self._extend(found, minute)
        elif minute <= found.last - self.capacity + 1:
            return
        slot, previous = self._row[minute % self.capacity], self._row[(minute - 1) % self.capacity]
        delta = values - (found.cum[slot] - found.cum[previous])
        later = self._row[np.arange(minute, found.last + 1) % self.capacity]
        found.cum[later] += delta

    def has(self, key: tuple[str, str]) -> bool:
        return key in self._keys

    def load(self, key: tuple[str, str], minutes: np.ndarray, values: FloatArray) -> None:
        """A key not seen yet, all at once: `values[i]` is minute `minutes[i]`'s (unique minutes, any order); as
        `set` per minute would leave it, in one cumulative sum instead of a pass per minute (a restart's refill)."""
        if key in self._keys:
            raise ValueError(f"{key} already has sums")
        last = int(minutes.max())
        first = last - self.capacity + 1
        kept = minutes >= first
        dense = np.zeros((self.capacity, len(COLUMNS)))
        dense[minutes[kept] - first] = values[kept]
        cum = np.zeros_like(dense)
        cum[(first + np.arange(self.capacity)) % self.capacity] = np.cumsum(dense, axis=0)
        if self._hours:  # slot order -> row order: a transposed copy instead of a scattered write
            cum = np.ascontiguousarray(cum.reshape(self._hours, 60, len(COLUMNS)).transpose(1, 0, 2))
            cum = cum.reshape(self.capacity, len(COLUMNS))
        self._keys[key] = _Instance(cum, last)

    def _extend(self, found: _Instance, minute: int) -> None:
        """Sum the minutes (last, minute] as empty: each holds the last sum."""
        carried = found.cum[self._row[found.last % self.capacity]].copy()
        fresh = np.arange(max(found.last + 1, minute - self.capacity + 1), minute + 1)
        found.cum[self._row[fresh % self.capacity]] = carried
        found.last = minute

    def minute_values(self, key: tuple[str, str], minutes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each of `minutes`' latest values (zeros for a key or a minute not summed yet), and whether it is known:
        a minute as old as the ring or older is not (its slot before holds a newer minute)."""
        found = self._keys.get(key)
        values = np.zeros((len(minutes), len(COLUMNS)))
        if found is None:
            return values, np.ones(len(minutes), dtype=bool)
        known = minutes > found.last - self.capacity + 1
        summed = np.flatnonzero(known & (minutes <= found.last))
        at = minutes[summed]
        values[summed] = found.cum[self._row[at % self.capacity]] - found.cum[self._row[(at - 1) % self.capacity]]
        return values, known

    def before(self, key: tuple[str, str], minutes: np.ndarray) -> np.ndarray:
        """Sums of every minute before each of `minutes` (epoch minutes), shape (len(minutes), len(COLUMNS)).
        Minutes past the newest summed repeat its sum; minutes older than the ring are refused."""
        found: np.ndarray = self.before_many([key], minutes)[0]
        return found

    def before_many(self, keys: Sequence[tuple[str, str]], minutes: np.ndarray) -> np.ndarray:
        """`before` of each key, stacked: shape (len(keys), len(minutes), len(COLUMNS)), filled in place."""
        found = np.empty((len(keys), len(minutes), len(COLUMNS)))
        for i, key in enumerate(keys):
            instance = self._keys[key]
            through = np.minimum(minutes - 1, instance.last)
            if len(through) and int(through.min()) <= instance.last - self.capacity:
                raise ValueError(f"minute {int(through.min())} is older than the ring of {self.capacity} minutes")
            rows = self._row[through % self.capacity]
            instance.cum.take(rows, axis=0, out=found[i])  # take: half fancy indexing's time
        return found
