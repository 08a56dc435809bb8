"""The lag families written from the evaluator's arrays (lag/serve/: metrics.py, text_families.py, scrape.py) are
byte for byte what client_python printed for the objects of every `GroupStatus` (the oracle in tests/support), on a
store with thousands of groups: every status, NOTFOUND (expired) and UNKNOWN (cluster down) groups, placeholders,
time lags from sorted and unsorted HWM histories, exact time lags, page-cache flags, offsets past 1e6 and 2**53,
label values that need escaping, owners and member counts; in both text formats and OpenMetrics, per partition and
per group; and again after groups, topics and partitions come and go."""

from __future__ import annotations

import gzip
import math
import random
from typing import Literal

import httpx
import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import choose_encoder
from prometheus_client.utils import floatToGoString

from lag.evaluate.columnar.block import gather_histories, partition_index
from lag.evaluate.columnar.timelag import time_lags
from lag.evaluate.rules import Rule
from lag.evaluate.timelag import time_lag_seconds
from lag.protocol import MODES, Mode, PageCacheEstimate
from lag.serve.metrics import LagCollector, _neighbour_families
from lag.serve.text_families import BLOCK_LINES, FAMILIES, float_texts, int_texts
from lag.service import LagService
from pulse.config import HttpConfig, LagConfig
from pulse.http import HttpServer
from pulse.http.exposition import STREAM_BYTES, encode, encode_families
from pulse.ports import free_ports
from tests.support.lag_metrics_oracle import ObjectLagCollector

NOW = 1_700_000_000_000
ACCEPT = (
    "",  # text 0.0.4
    "application/openmetrics-text; version=1.0.0",
    "text/plain; version=1.0.0; escaping=allow-utf-8",
)
CLUSTERS = ("prod", 'we"ird\\cl\nuster', "down")
BASES = (0, 5, 999_000, 10**6, 12_340_000, 10**15, 2**53 - 50, 2**53 + 7, 10**17)


class DownCluster:
    """The `down` cluster's source is stale: its groups are UNKNOWN."""

    def unavailable_reason(self, cluster: str, now_ms: int) -> str | None:
        return "no HWM refresh for 99 s" if cluster == "down" else None


def group_name(rng: random.Random, i: int) -> str:
    odd = ('"', "\\", "\n", "é", "组", " ", "%", "{}", ",")
    return f"g{i:05d}" + ("".join(rng.sample(odd, 2)) if i % 7 == 0 else "")


def build(mode: Mode, seed: int = 15, groups: int = 700) -> LagService:
    """A store of `groups` groups in each of three clusters, the same for the same arguments."""
    rng = random.Random(seed)
    config = LagConfig(mode=mode, intervals=5, min_distance_s=0, expire_group_s=3600, hwm_history=12)
    service = LagService(config, health=DownCluster(), clock_ms=lambda: NOW)
    store = service.store
    record_times = service.record_times(100_000)
    for cluster in CLUSTERS:
        topics = [f"topic-{t:03d}" + ('"é' if t % 11 == 0 else "") for t in range(40)]
        sizes = {topic: rng.randint(1, 8) for topic in topics}
        leaders = {}
        for topic, n in sizes.items():
            for p in range(n):
                base, samples = rng.choice(BASES), rng.choice((1, 1, 2, 5, 12))
                offset, t_ms = base, NOW - 600_000
                for _ in range(samples):
                    store.add_hwm(cluster, topic, p, offset, t_ms)
                    offset += rng.choice((0, 0, 3, 40, 1000, 123_457)) * (-1 if rng.random() < 0.05 else 1)
                    t_ms += rng.choice((0, 10_000, 30_000))
                leaders[(topic, p)] = rng.randint(1, 3)
        service.set_page_cache(cluster, PageCacheEstimate({1: 30.0, 2: math.inf}, leaders))  # broker 3: unknown
        for g in range(groups):
            group = group_name(rng, g)
            old = g % 50 == 0  # expired by scrape time
            for topic in rng.sample(topics, rng.choice((1, 1, 2, 3))):
                for p in range(sizes[topic]):
                    if rng.random() < 0.15:
                        continue  # a placeholder: the group never committed here
                    hwm = store.hwms.latest(cluster, topic, p) or 0
                    kinds = ("catching", "stalled", "caught", "rewind", "ahead", "stopped", "falling", "falling")
                    behaviour = rng.choice(kinds)
                    count = rng.randint(1, 7)
                    t_ms = NOW - (3_650_000 if old else 300_000)
                    offset = max(0, hwm - rng.choice((0, 7, 5000, 2_000_000)))
                    for i in range(count):
                        if behaviour == "falling":  # the log end runs away faster than the group commits: WARN
                            store.add_hwm(cluster, topic, p, hwm + 1000 * (i + 1), t_ms)
                        o = {
                            "catching": offset + 3 * i,
                            "stalled": offset,
                            "caught": hwm,
                            "rewind": offset + 5 - 9 * i,
                            "ahead": hwm + 2,
                            "stopped": offset + i,
                            "falling": offset + i,
                        }[behaviour]
                        store.add_commit(cluster, group, topic, p, max(o, 0), t_ms, NOW - 60_000)
                        t_ms += rng.choice((10_000, 60_000)) if behaviour != "stopped" else 1000
                    if rng.random() < 0.5:
                        record_times.put((cluster, topic, p, max(o, 0)), NOW - rng.randint(0, 90_000))
    add_owners(service, random.Random(seed + 1))
    return service


def add_owners(service: LagService, rng: random.Random) -> None:
    """Owners and member counts for a third of the groups, as group metadata gives them (not in the text)."""
    store = service.store
    for cluster in CLUSTERS:
        for group in store.groups(cluster)[::3]:
            store.set_members(cluster, group, rng.randint(1, 4))
            for topic in store.group_topics(cluster, group):
                for p in range(rng.randint(1, 3)):
                    store.set_owner(cluster, group, topic, p, f"/10.0.0.{rng.randint(1, 9)}", f"client-{group}")


def oracle(service: LagService, granularity: Literal["partition", "group"], accept: str) -> bytes:
    encoder, _ = choose_encoder(accept)
    return encode_families(encoder, list(ObjectLagCollector(service, granularity).collect()))


CASES = [
    *((mode, "partition", ACCEPT[0]) for mode in MODES),
    ("enhanced", "group", ACCEPT[0]),
    *(("enhanced", "partition", accept) for accept in ACCEPT[1:]),
]


@pytest.mark.parametrize(("mode", "granularity", "accept"), CASES)
def test_written_families_equal_client_pythons_rendering_of_the_objects(
    mode: Mode, granularity: Literal["partition", "group"], accept: str
) -> None:
    want = oracle(build(mode), granularity, accept)
    encoder, _ = choose_encoder(accept)
    pieces = list(LagCollector(build(mode), granularity).render(encoder))
    assert b"".join(pieces) == want
    assert len(pieces) > len(CLUSTERS)  # a piece per family and cluster at least, never one whole body
    assert max(piece.count(b"\n") for piece in pieces) <= BLOCK_LINES + 2 * len(FAMILIES)
    lines = want.decode().splitlines()
    samples = [line for line in lines if not line.startswith("#")]
    assert len(samples) > (20_000 if granularity == "partition" else 9_000)
    escaped = ('\\"', "\\\\", "\\n", "组", 'cluster="we\\"ird\\\\cl\\nuster"')
    big = ("e+06", "e+15", "e+16") if granularity == "partition" else ()  # offsets past 1e6, 1e15, 2**53
    for needle in (*escaped, 'burrow_kafka_consumer_status{cluster="down"', *big):
        assert any(needle in line for line in samples), needle
    for value in ("-1.0", "0.0", "1.0", "2.0", "3.0"):  # UNKNOWN, NOTFOUND, OK, WARN, ERR groups
        assert any(line.startswith("burrow_kafka_consumer_status{") and line.endswith(" " + value) for line in samples)
    if granularity == "partition":
        for family in ("kafka_pulse_lag_beyond_page_cache{", "kafka_pulse_lag_exact_seconds{"):
            assert sum(line.startswith(family) for line in samples) > 1000, family
        statuses = {
            line.rsplit(" ", 1)[1] for line in samples if line.startswith("burrow_kafka_topic_partition_status")
        }
        assert {"1.0", "2.0", "4.0", "5.0", "6.0"} <= statuses


def test_the_text_follows_groups_and_topics_that_come_and_go() -> None:
    """Scrape, then delete groups, a group's topic and a whole topic, empty a partition, add a group and commits:
    the next scrape is again what the objects print (nothing of the first one is reused). Two equal stores, as a
    scrape purges expired groups from the one it reads."""
    service, twin = build("burrow", groups=150), build("burrow", groups=150)
    collector, encoder = LagCollector(service), choose_encoder("")[0]
    assert b"".join(collector.render(encoder)) == oracle(twin, "partition", "")
    for store in (service.store, twin.store):
        groups = store.groups("prod")
        store.delete_group("prod", groups[1])
        store.delete_group_topic("prod", groups[2], store.group_topics("prod", groups[2])[0])
        store.delete_topic("prod", "topic-005")
        store.clear_partition("prod", groups[3], store.group_topics("prod", groups[3])[0], 0)
        store.add_hwm("prod", "topic-new", 0, 500, NOW - 1000)
        for i in range(5):
            ts = NOW - 50_000 + 10_000 * i
            store.add_commit("prod", "a-new group", "topic-new", 0, 100 * i, ts, NOW - 1000)
            store.add_commit("prod", groups[4], "topic-new", 0, 490, ts, NOW - 1000)
    text = b"".join(collector.render(encoder))
    assert text == oracle(twin, "partition", "")
    assert b'cluster="prod",consumer_group="a-new group"' in text
    assert f'cluster="prod",consumer_group="{groups[1]}"'.encode() not in text


@pytest.mark.parametrize("accept", ACCEPT[:2])
def test_a_whole_scrape_is_what_client_python_printed(accept: str) -> None:
    """Through pulse.http's `encode`: the written families sit where the objects were, the service's own families
    (counters included), the members' and the noisy neighbours' follow as client_python renders them, OpenMetrics
    ends with one `# EOF`."""
    encoder, _ = choose_encoder(accept)
    new, old = CollectorRegistry(), CollectorRegistry()
    new.register(LagCollector(build("enhanced", groups=100)))
    service = build("enhanced", groups=100)
    old.register(ObjectLagCollector(service))

    class ServiceFamilies:
        def collect(self):  # type: ignore[no-untyped-def]
            collector = LagCollector(service)
            return [*collector._service_families(), *collector._member_families(), *_neighbour_families([])]

    old.register(ServiceFamilies())
    assert encode(new, encoder) == encoder(old)


def test_a_scrape_over_http_is_streamed_and_is_what_client_python_printed() -> None:
    """A real listener: the lag families are past `STREAM_BYTES`, so /metrics arrives in chunks, plain and gzipped,
    and both are the text client_python prints for the objects (one store per scrape: a scrape purges)."""
    service = build("enhanced", groups=250)
    old = CollectorRegistry()
    old.register(ObjectLagCollector(service))

    class ServiceFamilies:
        def collect(self):  # type: ignore[no-untyped-def]
            collector = LagCollector(service)
            return [*collector._service_families(), *collector._member_families(), *_neighbour_families([])]

    old.register(ServiceFamilies())
    want = generate_latest(old)
    assert len(want) > 2 * STREAM_BYTES
    for encoding in ("identity", "gzip"):
        new = CollectorRegistry()
        new.register(LagCollector(build("enhanced", groups=250)))
        (port,) = free_ports(1)
        server = HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}"), new).start()
        try:
            headers = {"Accept-Encoding": encoding}
            with httpx.stream("GET", f"{server.url}/metrics", headers=headers, timeout=60) as answer:
                raw = b"".join(answer.iter_raw())
        finally:
            server.stop()
        assert answer.headers["transfer-encoding"] == "chunked"
        assert (gzip.decompress(raw) if encoding == "gzip" else raw) == want


INTS = [
    0,
    1,
    9,
    65_535,
    65_536,
    999_999,
    10**6,
    1_000_001,
    1_234_000,
    1_200_000_000,
    10**15,
    10**15 + 1,
    2**53 - 1,
    2**53,
    2**53 + 1,
    10**16,
    10**17 + 3,
    2**63 - 1,
    -1,
    -65_537,
    -(10**15) + 1,
    -(10**15),
    -(2**63),
]
FLOATS = [
    0.0,
    1.5,
    1e-7,
    123.456,
    999_999.9,
    1e6,
    1_234_567.891,
    1e15,
    1e16,
    1e22,
    math.inf,
    -math.inf,
    math.nan,
    -2.5,
    5e-324,
]


def test_values_print_as_float_to_go_string() -> None:
    rng = np.random.default_rng(1)
    ints = np.array(INTS + rng.integers(-(2**62), 2**62, 2000).tolist() + rng.integers(0, 10**8, 2000).tolist())
    assert int_texts(ints) == [floatToGoString(v) + "\n" for v in ints.tolist()]  # type: ignore[no-untyped-call]
    floats = np.array(FLOATS + (rng.random(2000) * 10.0 ** rng.integers(-3, 12, 2000)).tolist())
    assert float_texts(floats) == [floatToGoString(v) + "\n" for v in floats.tolist()]  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("seed", range(3))
def test_columnar_time_lags_are_the_scalar_ones(seed: int) -> None:
    service = build("enhanced", seed, groups=200)
    store = service.store
    for cluster in CLUSTERS:
        ids = store.sorted_groups(cluster)[1]
        index = partition_index(store, ids)
        verdicts = service.evaluator.evaluate_groups(cluster, ids, NOW)
        has_commit = verdicts.rules != Rule.NO_COMMIT
        newest = [store.commits.newest(s) for s in index.slots.tolist()]
        last = np.array([n[0] if n else 0 for n in newest], dtype=np.int64)
        histories, history = gather_histories(store, index.hwm_rows)
        got = time_lags(last, has_commit, histories, history, NOW)
        for r, row in enumerate(index.hwm_rows.tolist()):
            hwm_offsets, hwm_times = store.hwms.history_of_row(row) if row >= 0 else ([], [])
            want = time_lag_seconds(int(last[r]), hwm_offsets, hwm_times, NOW) if has_commit[r] else None
            assert (math.isnan(got[r]) and want is None) or got[r] == want, (r, got[r], want)
