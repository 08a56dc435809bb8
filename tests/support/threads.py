"""CPU time of this process's librdkafka threads, read from /proc (Linux): how a test tells a client that waits
from one that spins. librdkafka names its threads `rdk:main`, `rdk:broker<id>` and so on."""

from __future__ import annotations

import os
from pathlib import Path

TASKS = Path("/proc/self/task")
LIBRDKAFKA_PREFIX = "rdk:"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def librdkafka_cpu_s() -> dict[int, float]:
    """Thread id -> CPU seconds used so far (user + system) of every live librdkafka thread of this process."""
    out: dict[int, float] = {}
    for task in TASKS.iterdir():
        try:
            stat = (task / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):  # the thread ended since the listing
            continue
        # proc(5): "tid (comm) state ... utime stime ...": comm may hold spaces or ")", so split at the last ")".
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if not name.startswith(LIBRDKAFKA_PREFIX):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of the whole line
        out[int(task.name)] = (utime + stime) / _CLOCK_TICKS
    return out


def names(tids: set[int]) -> dict[int, str]:
    """Thread id -> thread name, for the live ones among `tids` (failure messages)."""
    out: dict[int, str] = {}
    for tid in tids:
        try:
            out[tid] = (TASKS / str(tid) / "comm").read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out
