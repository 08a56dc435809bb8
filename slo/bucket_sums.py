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
    """Per slot (minute % capacity): the sums of every minute up to and including that minute, since the instance
    was first seen; a minute's own values are the difference with the slot before."""
    last: int
    """The newest minute summed; every minute in (last - capacity, last] has its slot."""


class RunningSums:
    """Cumulative sums per key over a ring of `capacity` minutes (float64: counts stay exact up to 2^53)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(2, capacity)
        self._keys: dict[tuple[str, str], _Instance] = {}

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
        slot, previous = minute % self.capacity, (minute - 1) % self.capacity
        delta = values - (found.cum[slot] - found.cum[previous])
        later = np.arange(minute, found.last + 1) % self.capacity
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
        self._keys[key] = _Instance(cum, last)

    def _extend(self, found: _Instance, minute: int) -> None:
        """Sum the minutes (last, minute] as empty: each holds the last sum."""
        carried = found.cum[found.last % self.capacity].copy()
        fresh = np.arange(max(found.last + 1, minute - self.capacity + 1), minute + 1)
        found.cum[fresh % self.capacity] = carried
        found.last = minute

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
            instance.cum.take(through % self.capacity, axis=0, out=found[i])  # take: half fancy indexing's time
        return found
