"""The ring-run allocation behind `offsets.py`: per group id its name, its newest commit time and its chain of runs,
and per run (one group's topic) the range of commit-window slots it owns, one per partition.

Everything lives in flat arrays as narrow as their values allow, so a million group-partitions cost little beyond
their windows: a group's last commit time is int32 ms from an epoch, a run's topic id and partitions are uint16, and
either is widened for good when a value does not fit, as the windows are (`arrays.py`). `OffsetStore.add_commit`
reads these arrays directly (no method call per commit); this class allocates, grows, chains and frees.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

import numpy as np

from lag.store.arrays import fitting_epoch
from lag.store.windows import CommitWindows

NONE = -1
"""End of a run chain / no run."""
_WIDE_GROUP_RUNS = 8
"""A group with more topics than this gets a topic -> run dict instead of walking its chain."""
_U16_MAX = 65535
"""Topic ids and partition counts of runs are uint16 until one is larger (then int32 for good)."""


class GroupRuns:
    """Group ids and their runs of window slots (one run per group/topic), handed out, grown and reused."""

    def __init__(self, commits: CommitWindows) -> None:
        self.commits = commits
        """The windows the runs' slots index."""
        self.names: list[str | None] = []
        """Per group id its name; None for a free id."""
        self._free_gids: list[int] = []
        self.last_commit = array("i")
        """Per group id: its newest commit's timestamp less `last_epoch_ms`."""
        self.last_epoch_ms = 0
        self.first_run = array("i")
        """Per group id: the run of its newest topic, heading its chain (`NONE` when it has none)."""
        self.wide: dict[int, dict[int, int]] = {}
        """Group id -> topic id -> run, for groups with many topics."""
        # per run: group id (NONE when free), topic id, first slot, partitions, next run of the group
        self.run_group = array("i")
        self.run_topic = array("H")
        self.run_base = array("i")
        self.run_partitions = array("H")
        self.run_next = array("i")
        self._free_runs: list[int] = []

    # -- groups ------------------------------------------------------------------------------------------------------

    def new_group(self, group: str) -> int:
        """An id for a group with no run yet, a freed one when there is one."""
        if self._free_gids:
            gid = self._free_gids.pop()
            self.names[gid] = group
            self.first_run[gid] = NONE
        else:
            gid = len(self.names)
            self.names.append(group)
            self.last_commit.append(0)
            self.first_run.append(NONE)
        return gid

    def free_group(self, gid: int) -> None:
        """Give back every run of the group and its id."""
        for run in list(self.chain(gid)):
            self.drop_run(gid, run)
        self.wide.pop(gid, None)
        self.names[gid] = None
        self._free_gids.append(gid)

    def last_commit_ms(self, gid: int) -> int:
        return self.last_commit[gid] + self.last_epoch_ms

    def fit_last(self, gid: int, timestamp_ms: int) -> int:
        """Move the last-commit epoch so that `timestamp_ms` and every other stored group's last commit fit int32,
        or widen them to int64 (epoch 0) when their span is too wide; returns `timestamp_ms` as stored."""
        if self.last_commit.typecode != "i":
            raise OverflowError(f"commit timestamp {timestamp_ms} does not fit int64")
        values = np.frombuffer(self.last_commit, dtype=np.int32).astype(np.int64) + self.last_epoch_ms
        live = np.array([name is not None for name in self.names], dtype=np.bool_)
        live[gid] = False  # its value is being replaced
        held = values[live]
        low = min(int(held.min()), timestamp_ms) if len(held) else timestamp_ms
        high = max(int(held.max()), timestamp_ms) if len(held) else timestamp_ms
        epoch = fitting_epoch(low, high)
        if epoch is None:
            self.last_commit = array("q", values.tolist())
            self.last_epoch_ms = 0
        else:
            shifted = np.where(live, values - epoch, 0).astype(np.int32)
            self.last_commit = array("i", shifted.tobytes())
            self.last_epoch_ms = epoch
        return timestamp_ms - self.last_epoch_ms

    # -- runs --------------------------------------------------------------------------------------------------------

    def find_run(self, gid: int, tid: int) -> int:
        """The group's run for the topic id; `NONE` when it has none."""
        wide = self.wide.get(gid)
        if wide is not None:
            return wide.get(tid, NONE)
        run = self.first_run[gid]
        while run != NONE and self.run_topic[run] != tid:
            run = self.run_next[run]
        return run

    def run(self, gid: int, tid: int, partitions: int) -> int:
        """The group's run for the topic, one slot per partition (Burrow's placeholders), grown when partitions grew."""
        run = self.find_run(gid, tid)
        if run == NONE:
            return self._new_run(gid, tid, self.commits.allocate(partitions), partitions)
        have = self.run_partitions[run]
        if have < partitions:
            old = self.run_base[run]
            bigger = self.commits.allocate(partitions)
            for p in range(have):
                offsets, timestamps, lags = self.commits.read(old + p)
                for o, t, lag in zip(offsets, timestamps, lags, strict=True):
                    self.commits.push(bigger + p, o, t, lag)
            self.commits.release(old, have)
            if partitions > _U16_MAX:
                self._widen_runs(0, partitions)
            self.run_base[run] = bigger
            self.run_partitions[run] = partitions
        return run

    def _widen_runs(self, tid: int, partitions: int) -> None:
        """A topic id or a partition count past uint16: that column becomes int32 for good."""
        if tid > _U16_MAX and self.run_topic.typecode == "H":
            self.run_topic = array("i", self.run_topic)
        if partitions > _U16_MAX and self.run_partitions.typecode == "H":
            self.run_partitions = array("i", self.run_partitions)

    def _new_run(self, gid: int, tid: int, base: int, partitions: int) -> int:
        if tid > _U16_MAX or partitions > _U16_MAX:
            self._widen_runs(tid, partitions)
        following = self.first_run[gid]
        if self._free_runs:
            run = self._free_runs.pop()
            self.run_group[run], self.run_topic[run], self.run_base[run] = gid, tid, base
            self.run_partitions[run], self.run_next[run] = partitions, following
        else:
            run = len(self.run_group)
            self.run_group.append(gid)
            self.run_topic.append(tid)
            self.run_base.append(base)
            self.run_partitions.append(partitions)
            self.run_next.append(following)
        self.first_run[gid] = run
        if following == NONE:  # the group's first topic
            return run
        wide = self.wide.get(gid)
        if wide is not None:
            wide[tid] = run
        else:
            chain = list(self.chain(gid))
            if len(chain) > _WIDE_GROUP_RUNS:
                self.wide[gid] = {self.run_topic[r]: r for r in chain}
        return run

    def chain(self, gid: int) -> Iterator[int]:
        """The group's runs, newest topic first."""
        run = self.first_run[gid]
        while run != NONE:
            yield run
            run = self.run_next[run]

    def drop_run(self, gid: int, run: int) -> None:
        """Unlink a run from its group and give its slots back."""
        previous = NONE
        for r in self.chain(gid):
            if r == run:
                break
            previous = r
        if previous == NONE:
            self.first_run[gid] = self.run_next[run]
        else:
            self.run_next[previous] = self.run_next[run]
        wide = self.wide.get(gid)
        if wide is not None:
            wide.pop(self.run_topic[run], None)
        self.commits.release(self.run_base[run], self.run_partitions[run])
        self.run_group[run] = NONE
        self.run_partitions[run] = 0
        self._free_runs.append(run)

    def runs_on(self, tid: int) -> list[int]:
        """The runs in use on a topic id, one per group consuming it."""
        return [r for r, t in enumerate(self.run_topic) if t == tid and self.run_group[r] != NONE]

    def has_commits(self, gid: int) -> bool:
        """True while any window of the group holds a commit."""
        count = self.commits.count
        return any(count(self.run_base[r] + p) for r in self.chain(gid) for p in range(self.run_partitions[r]))
