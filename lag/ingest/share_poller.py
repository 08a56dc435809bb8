"""One cluster's share groups read every `lag.share_groups.refresh_s` (pulse/kafka/share_groups.py, kafka-python)
and judged into the `ShareBoard`; a tick never raises (a failed read is the reading's reason)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from lag.store.share_board import ShareBoard
from pulse.kafka.share_groups import ShareGroupReader


class SharePoller:
    """Reads `cluster`'s share groups with kafka-python `settings` into `board`; `poll` is the Periodic's tick."""

    def __init__(
        self,
        cluster: str,
        settings: Mapping[str, Any],
        board: ShareBoard,
        clock_s: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.reader = ShareGroupReader(settings)
        """One client for every read, closed by `close` (`pulse.kafka.admin_client.KeptAdminClient` says why)."""
        self.board = board
        self.clock_s = clock_s

    def poll(self) -> None:
        read = self.reader.read()
        self.board.record(self.cluster, read, self.clock_s())

    def close(self) -> None:
        """After the loop stopped: no read is in progress."""
        self.reader.close()
