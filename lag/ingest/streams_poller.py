"""One cluster's streams groups described every `lag.streams_groups.refresh_s` (pulse/kafka/streams_groups.py,
kafka-python) into the `StreamsBoard`; a tick never raises (a failed read is the reading's reason)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from lag.store.streams_board import StreamsBoard
from pulse.kafka.streams_groups import StreamsGroupReader


class StreamsPoller:
    """Reads `cluster`'s streams groups with kafka-python `settings` into `board`; `poll` is the Periodic's tick."""

    def __init__(
        self,
        cluster: str,
        settings: Mapping[str, Any],
        board: StreamsBoard,
        clock_s: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.reader = StreamsGroupReader(settings)
        """One client for every read, closed by `close` (`pulse.kafka.admin_client.KeptAdminClient` says why)."""
        self.board = board
        self.clock_s = clock_s

    def poll(self) -> None:
        self.board.record(self.cluster, self.reader.read(), self.clock_s())

    def close(self) -> None:
        """After the loop stopped: no read is in progress."""
        self.reader.close()
