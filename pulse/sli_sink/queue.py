"""The SLI sink's two queues: `HandOff`, the bounded in-memory queue the probe loop offers rows to (a lock and an
append, never disk or network), and `EventSpool`, the bounded on-disk queue every event passes through on its way
to Kafka (pulse/alerts/spool.py's `Spool`, so a restart finds what was not delivered yet, in order).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pulse.alerts.spool import Spool
from pulse.sli_sink.encode import SpooledEvent, SpooledEventCodec, Stream

SPOOL_FILE = "sli-events.spool"
"""The spool's file under the sink's directory."""


@dataclass(frozen=True, slots=True)
class Offered:
    """One table of rows of one stream, as the producer offered it."""

    stream: Stream
    table: pa.Table


class HandOff:
    """Rows waiting for the sink's thread, at most `capacity` of them. Full means the offered table is refused whole
    (the newest is dropped, as the Parquet logs do): a cycle of the lag log is then absent, never half there."""

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._items: deque[Offered] = deque()
        self._rows = 0
        self._lock = threading.Lock()

    def offer(self, stream: Stream, table: pa.Table) -> bool:
        """Queue the table unless its rows do not fit; never waits for anything but this queue's lock."""
        rows = table.num_rows
        with self._lock:
            if self._rows + rows > self.capacity:
                return False
            self._items.append(Offered(stream, table))
            self._rows += rows
        return True

    def take(self) -> list[Offered]:
        """Everything queued, in order."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
            self._rows = 0
        return items

    @property
    def rows(self) -> int:
        with self._lock:
            return self._rows


class EventSpool(Spool[SpooledEvent]):
    """Events not delivered yet, oldest first, at most `max_bytes`; past the bound the oldest are dropped (the
    spool's overflow), so after a long outage the most recent hours survive."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        super().__init__(directory, max_bytes, SpooledEventCodec(), file_name=SPOOL_FILE)
