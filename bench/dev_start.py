"""Start-up time of the dev cluster: `dev up` to every broker RUNNING and in metadata, then `dev down`.

Run: python bench/dev_start.py [--runs 3]. Prints one row per topology with median, min and max seconds.
Jars must already be cached (`kafka-pulse dev fetch`), so Maven time is not counted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from figures import FigureLog

from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION, LEGACY_VERSION
from devstack.topology import Security
from pulse.paths import cache_dir

TOPOLOGIES = [
    (3, DEFAULT_VERSION, Security.PLAINTEXT),
    (1, LEGACY_VERSION, Security.PLAINTEXT),
    (1, DEFAULT_VERSION, Security.SASL_SSL),
]


def time_up(brokers: int, version: str, security: Security) -> tuple[float, float]:
    """Seconds for `up` and for `down` of one fresh cluster."""
    with tempfile.TemporaryDirectory(prefix="pulse-bench-") as home:
        cluster = DevCluster.plan(Path(home) / "dev", brokers, version, security)
        started = time.monotonic()
        cluster.up(cache_dir())
        up_s = time.monotonic() - started
        started = time.monotonic()
        cluster.down()
        return up_s, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    log = FigureLog("dev_start")
    print("| topology | up median (s) | up min-max (s) | down median (s) |")
    print("|---|---|---|---|")
    for brokers, version, security in TOPOLOGIES:
        ups, downs = zip(*(time_up(brokers, version, security) for _ in range(args.runs)), strict=True)
        print(
            f"| {brokers} node(s), Kafka {version}, {security.value} | {statistics.median(ups):.1f} | "
            f"{min(ups):.1f}-{max(ups):.1f} | {statistics.median(downs):.1f} |"
        )
        log.add("dev.up", f"{brokers} node(s), Kafka {version}, {security.value}", statistics.median(ups), "s")
    log.write(args.figures_out)


if __name__ == "__main__":
    main()
