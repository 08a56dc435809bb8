"""CPU of the broker-side audit's settling (audit/minutes.py `MinuteBook.settle`), in process, no cluster: T topics
of P partitions, two minute boundaries recorded, G groups committed past both, then one settle of every
(group, topic, minute) due. The reads of a real cycle are measured by `large_cluster_bench.py --steps audit`.

Run: python bench/audit_settle_bench.py [--topics 1000] [--partitions 10] [--groups 100]. The same script runs
against any tree (PYTHONPATH), so the figures before and after a change come from one command.
"""

from __future__ import annotations

import argparse
import time

from audit.minutes import MINUTE_MS, MinuteBook


def settle_cpu_s(topics: int, partitions: int, groups: int) -> tuple[int, float]:
    """(minutes settled, CPU seconds of the settle) for the shape."""
    book = MinuteBook([f"group-{g}" for g in range(groups)], max_wait_ms=900_000)
    base = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE_MS
    names = [f"topic-{t}" for t in range(topics)]
    for boundary in range(2):
        for name in names:
            book.record_boundary(name, base + boundary * MINUTE_MS, dict.fromkeys(range(partitions), 100 * boundary))
    committed = {(name, p): 150 for name in names for p in range(partitions)}
    for g in range(groups):
        book.observe_commits(f"group-{g}", committed, base + 2 * MINUTE_MS)
    started = time.process_time()
    settled = book.settle(base + 2 * MINUTE_MS + 1_000)
    return len(settled), time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--groups", type=int, default=100)
    args = parser.parse_args()
    settled, cpu_s = settle_cpu_s(args.topics, args.partitions, args.groups)
    print(f"audit settle: {args.topics} topics x {args.partitions} partitions, {args.groups} groups")
    print(f"  {settled:,} (group, topic, minute)s settled in {cpu_s:.2f} s of CPU")


if __name__ == "__main__":
    main()
