"""One cluster's share or streams groups read every `refresh_s` (pulse/kafka/share_groups.py, streams_groups.py,
kafka-python) into their board; a tick never raises (a failed read is the reading's reason)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

ReadT = TypeVar("ReadT")
ReadT_co = TypeVar("ReadT_co", covariant=True)
ReadT_contra = TypeVar("ReadT_contra", contravariant=True)


class GroupReader(Protocol[ReadT_co]):
    """`ShareGroupReader` or `StreamsGroupReader`: one kept client, every group of its type read at once."""

    def read(self) -> ReadT_co: ...

    def close(self) -> None: ...


class GroupBoard(Protocol[ReadT_contra]):
    """`ShareBoard` or `StreamsBoard`: where a cluster's reads are kept (and, for share groups, judged)."""

    def record(self, cluster: str, read: ReadT_contra, now_s: float) -> Any: ...


class GroupTypePoller:
    """Reads `cluster`'s groups of one type through `reader` into `board`; `poll` is the Periodic's tick. The two
    group types differ only in their reader and board, so one poller serves both."""

    def __init__(
        self,
        cluster: str,
        reader: GroupReader[ReadT],
        board: GroupBoard[ReadT],
        clock_s: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self._poll: Callable[[], object] = lambda: board.record(cluster, reader.read(), clock_s())
        self._close = reader.close
        """One client for every read, closed by `close` (`pulse.kafka.admin_client.KeptAdminClient` says why)."""

    def poll(self) -> None:
        self._poll()

    def close(self) -> None:
        """After the loop stopped: no read is in progress."""
        self._close()
