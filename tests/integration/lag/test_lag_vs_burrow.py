"""Side by side: Debian's Burrow 1.2.1 and kafka-pulse in `burrow-1.2` mode, with the
same intervals, offset-refresh and min-distance, read the same Kafka 3.9 cluster, and one small httpx function reads
`/v3/kafka/{cluster}/consumer/{group}/status` from both. Their group and partition statuses must agree for real
groups that are caught up (OK), slow (WARN), stalled (STALL), stopped (STOP) and rewound (REWIND).

Determinism: the workload runs in rounds. Each round produces, waits until *both* sides report the new HWM (so both
compute the same lag at ingest), commits, and waits until both have stored every commit; nothing is produced while a
commit may still be in flight. Commits of one group are >= 1.2 s apart, so the 1 s min-distance never merges them and
both windows hold the same commits with the same broker timestamps.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from functools import partial
from typing import cast

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from lag.assembly import KafkaLagSource
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig
from pulse.polling import PollTimeout, poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.services import BurrowFactory
from tests.integration.devstack.test_dev_cluster import produce
from tests.support.burrow import BurrowOptions
from tests.support.lag_api import serve_lag_api

pytestmark = pytest.mark.integration

CLUSTER = "local"
INTERVALS = 5
OFFSET_REFRESH_S = 1
MIN_DISTANCE_S = 1
PER_ROUND = 100
"""Records produced per round; the HWM after round r is PER_ROUND * (r + 1) (plus the first commit's setup)."""
ROUNDS = 8
COMMIT_SPACING_S = 1.2
"""> min-distance, so no commit is merged into its predecessor on either side."""

REWIND_OFFSETS = (10, 20, 30, 40, 15, 16, 17, 18)
"""1.2.1 reports REWIND while any decrease is in the window (rounds 4-7 with intervals 5), recovered or not."""


def offset_plan(group: str, rnd: int, hwm: int) -> int | None:
    """The offset `group` commits in round `rnd` when the HWM is `hwm`; None: no commit this round."""
    return {
        "pv-caught-up": hwm,  # lag 0 at every commit: OK
        "pv-slow": 1 + 10 * rnd,  # progresses by 10 while 100 arrive: lag never decreases, WARN
        "pv-stalled": 5,  # same offset, lag growing: STALL
        "pv-stopped": 10 * (rnd + 1) if rnd < 2 else None,  # two commits then silence: STOP
        "pv-rewind": REWIND_OFFSETS[rnd],
    }[group]


EXPECTED = {"pv-caught-up": "OK", "pv-slow": "WARN", "pv-stalled": "STALL", "pv-stopped": "STOP", "pv-rewind": "REWIND"}
"""Partition status expected once windows are full (rounds 5-7); the group status is OK, WARN or ERR."""
COMPARED_ROUNDS = range(5, ROUNDS)


@dataclass(frozen=True)
class Verdict:
    """What `/status` says of a group: its status, the status of each partition it lists (those worse than OK),
    and its total lag."""

    status: str
    partitions: dict[tuple[str, int], str]
    totallag: int | None


def read_status(http: httpx.Client, base_url: str, cluster: str, group: str) -> Verdict:
    """The one client function that reads both Burrow's and kafka-pulse's v3 API."""
    body = http.get(f"{base_url}/v3/kafka/{cluster}/consumer/{group}/status").json()
    status = body.get("status") or {}
    partitions = {(p["topic"], p["partition"]): p["status"] for p in status.get("partitions") or []}
    return Verdict(status.get("status", "NOTFOUND"), partitions, status.get("totallag"))


def topic_hwm(http: httpx.Client, base_url: str, cluster: str, topic: str) -> int | None:
    body = http.get(f"{base_url}/v3/kafka/{cluster}/topic/{topic}").json()
    offsets = body.get("offsets") or []
    return int(offsets[0]) if offsets else None


def newest_commit(http: httpx.Client, base_url: str, cluster: str, group: str) -> tuple[int, int] | None:
    """(offset, timestamp) of the group's newest stored commit on partition 0, from `/lag`."""
    body = http.get(f"{base_url}/v3/kafka/{cluster}/consumer/{group}/lag").json()
    for p in (body.get("status") or {}).get("partitions") or []:
        if p["partition"] == 0 and p.get("end"):
            return int(p["end"]["offset"]), int(p["end"]["timestamp"])
    return None


AWAIT_S = 20.0
"""How long either side may take to show an HWM or a commit it was given."""


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    commit_offsets(consumer, [TopicPartition(topic, 0, offset)])


def test_burrow_12_and_kafka_pulse_agree_on_real_groups(kafka39: KafkaHandle, burrow_factory: BurrowFactory) -> None:
    topic = kafka39.create_topic("side-by-side", partitions=1, replication_factor=1)
    consumers = {g: kafka39.consumer(g) for g in EXPECTED}
    setup = kafka39.consumer("pv-setup")
    commit(setup, topic, 0)  # __consumer_offsets must exist before Burrow starts
    setup.close()

    options = BurrowOptions(
        offset_refresh_s=OFFSET_REFRESH_S,
        topic_refresh_s=2,
        intervals=INTERVALS,
        min_distance_s=MIN_DISTANCE_S,
        expire_cache_s=1,
    )
    burrow = burrow_factory(kafka39.bootstrap_servers.split(","), CLUSTER, options)
    settings = LagConfig(
        mode="burrow-1.2",
        intervals=INTERVALS,
        offset_refresh_s=OFFSET_REFRESH_S,
        min_distance_s=MIN_DISTANCE_S,
    )
    health = SourceHealth(stale_after_s=10.0, recovery_s=0.0)
    service = LagService(settings, health)
    source = KafkaLagSource(CLUSTER, kafka39.client_config(), service, health)
    api = serve_lag_api(service)
    source.start()
    sides = {"burrow-1.2.1": burrow.url, "kafka-pulse": api.url}
    compared: list[tuple[int, str, Verdict, Verdict]] = []
    last_commit_at = {g: 0.0 for g in EXPECTED}
    try:
        with httpx.Client(timeout=5, trust_env=False) as http:
            hwm = 0
            for rnd in range(ROUNDS):
                produce(kafka39, topic, PER_ROUND, f"r{rnd}")
                hwm += PER_ROUND
                for url in sides.values():
                    poll(
                        partial(topic_hwm, http, url, CLUSTER, topic),
                        partial(operator.eq, hwm),
                        AWAIT_S,
                        f"{url} sees HWM {hwm}",
                        0.1,
                    )
                before = {g: {n: newest_commit(http, u, CLUSTER, g) for n, u in sides.items()} for g in EXPECTED}
                committed: dict[str, int] = {}
                for group in EXPECTED:
                    offset = offset_plan(group, rnd, hwm)
                    if offset is None:
                        continue
                    wait_s = last_commit_at[group] + COMMIT_SPACING_S - time.monotonic()
                    if wait_s > 0:
                        time.sleep(wait_s)  # the commit cadence under test, not a wait for a condition
                    commit(consumers[group], topic, offset)
                    last_commit_at[group] = time.monotonic()
                    committed[group] = offset
                for group, offset in committed.items():
                    for name, url in sides.items():

                        def stored(
                            newest: tuple[int, int] | None, o: int = offset, old: object = before[group][name]
                        ) -> bool:
                            return newest is not None and newest[0] == o and newest != old

                        poll(
                            partial(newest_commit, http, url, CLUSTER, group),
                            stored,
                            AWAIT_S,
                            f"{name} stores {group}'s commit of {offset} in round {rnd}",
                            0.1,
                        )
                if rnd in COMPARED_ROUNDS:
                    for group in EXPECTED:
                        # Burrow caches a group's evaluation for expire-cache (1 s), so right after an HWM
                        # refresh it may still answer from the old HWM: re-read until both agree or 5 s pass.
                        def both(g: str = group) -> tuple[Verdict, Verdict]:
                            return read_status(http, burrow.url, CLUSTER, g), read_status(http, api.url, CLUSTER, g)

                        try:
                            theirs, ours = poll(both, lambda pair: pair[0] == pair[1], 5, f"agreement on {group}")
                        except PollTimeout as exc:
                            theirs, ours = cast(tuple[Verdict, Verdict], exc.last)  # compared below, as seen last
                        compared.append((rnd, group, theirs, ours))

        disagreements = [(r, g, t, o) for r, g, t, o in compared if t != o]
        assert disagreements == [], "\n".join(f"round {r} {g}: burrow {t} / kafka-pulse {o}" for r, g, t, o in compared)
        for _rnd, group, theirs, _ours in compared:
            want = EXPECTED[group]
            assert theirs.partitions == ({} if want == "OK" else {(topic, 0): want}), (group, theirs)
            assert theirs.status == {"OK": "OK", "WARN": "WARN"}.get(want, "ERR"), (group, theirs)
    finally:
        for c in consumers.values():
            c.close()
        api.stop()
        source.stop()
