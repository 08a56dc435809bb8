"""Member families on /metrics: member counts and share groups always, per-member lag only with
`lag.metrics_per_member` (off by default), rolled up from the partitions each owner holds."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from lag.serve.metrics import LagCollector, MemberLag, member_lags
from lag.service import LagService
from pulse.config import LagConfig
from pulse.http.exposition import encode


def service_with_a_group() -> LagService:
    """Group g on topic t (3 partitions): a and b own one partition each, the third has no known owner."""
    now = [1_000_000]
    service = LagService(LagConfig(intervals=2), None, lambda: now[0])
    with service.locked() as store:
        for p, hwm in enumerate((100, 500, 40)):
            store.add_hwm("c", "t", p, hwm, now[0])
        for p in range(3):
            store.add_commit("c", "g", "t", p, 10, now[0], now[0])
        store.set_owner("c", "g", "t", 0, "/10.0.0.1", "a")
        store.set_owner("c", "g", "t", 1, "/10.0.0.2", "b")
        store.set_members("c", "g", 2)
        store.set_share_group("c", "sg", True)
    return service


def test_member_lags_roll_up_each_owner() -> None:
    service = service_with_a_group()
    assert member_lags(service.all_statuses()) == [
        MemberLag("c", "g", "a", "/10.0.0.1", 90, 90, 1),
        MemberLag("c", "g", "b", "/10.0.0.2", 490, 490, 1),
    ]


def test_members_and_share_groups_always_per_member_lag_only_when_asked() -> None:
    service = service_with_a_group()
    off, on = CollectorRegistry(), CollectorRegistry()
    off.register(LagCollector(service))
    on.register(LagCollector(service, per_member=True))
    text_off, text_on = encode(off, generate_latest).decode(), encode(on, generate_latest).decode()
    for text in (text_off, text_on):
        assert 'kafka_pulse_lag_group_members{cluster="c",consumer_group="g"} 2.0' in text
        assert 'kafka_pulse_lag_share_group{cluster="c",share_group="sg"} 1.0' in text
    assert "kafka_pulse_lag_member_lag" not in text_off
    samples = {
        (s.name, s.labels["client_id"]): s.value
        for family in text_string_to_metric_families(text_on)
        for s in family.samples
        if s.name.startswith("kafka_pulse_lag_member_") and s.labels["consumer_group"] == "g"
    }
    assert samples[("kafka_pulse_lag_member_max_lag", "b")] == 490  # b owns the worst partition
    assert samples[("kafka_pulse_lag_member_lag", "a")] == 90
    assert samples[("kafka_pulse_lag_member_partitions", "b")] == 1
    assert len(samples) == 6  # two owners; the partition without one is left out


def test_the_option_is_off_by_default() -> None:
    assert LagConfig().metrics_per_member is False
    assert LagConfig(metrics_per_member=True).metrics_per_member is True
