"""The check's slow-broker lines from a run's /metrics text (pure): parse, then WARN on the brokers section."""

from __future__ import annotations

from kafka_pulse.check.consult.slow_brokers import add_slow_brokers, parse_slow_brokers
from kafka_pulse.check.facts import NotAvailable
from kafka_pulse.check.judge.verdict import Section, Status

TEXT = """\
# TYPE kafka_pulse_broker_slow gauge
kafka_pulse_broker_slow{cluster="dev",broker="1"} 0.0
kafka_pulse_broker_slow{cluster="dev",broker="2"} 1.0
kafka_pulse_broker_slow{cluster="other",broker="3"} 1.0
# TYPE kafka_pulse_broker_slow_score gauge
kafka_pulse_broker_slow_score{cluster="dev",broker="1"} 0.2
kafka_pulse_broker_slow_score{cluster="dev",broker="2"} 1.94
# TYPE kafka_pulse_broker_slow_reason gauge
kafka_pulse_broker_slow_reason{cluster="dev",broker="1",reason="ok"} 1.0
kafka_pulse_broker_slow_reason{cluster="dev",broker="2",reason="probe_rtt_ms"} 1.0
# TYPE kafka_pulse_broker_slow_signal_value gauge
kafka_pulse_broker_slow_signal_value{cluster="dev",broker="2",signal="probe_rtt_ms"} 194.0
# TYPE kafka_pulse_broker_slow_signal_peers gauge
kafka_pulse_broker_slow_signal_peers{cluster="dev",broker="2",signal="probe_rtt_ms"} 8.4
# TYPE kafka_pulse_broker_slow_signal_history gauge
kafka_pulse_broker_slow_signal_history{cluster="dev",broker="2",signal="probe_rtt_ms"} 25.0
"""
BROKERS = Section("brokers", Status.OK, "3/3 brokers answer", details={"expected": [1, 2, 3]})


def test_parse_names_only_flagged_brokers_of_the_cluster() -> None:
    (fact,) = parse_slow_brokers(TEXT, "dev")
    assert (fact.broker, fact.signal, fact.value, fact.peers, fact.history) == (2, "probe_rtt_ms", 194.0, 8.4, 25.0)
    assert fact.describe() == (
        "broker 2 is slow: probe_rtt_ms 194 ms against its peers' median 8.40 ms (own history 25 ms), score x1.9"
    )


def test_flagged_broker_warns_and_is_a_culprit() -> None:
    section = add_slow_brokers(BROKERS, parse_slow_brokers(TEXT, "dev"))
    assert section.status is Status.WARN and section.culprits == (2,)
    assert section.summary == "3/3 brokers answer; slow: broker 2"
    assert "slow" in section.reasons[0] and "broker 2" in section.reasons[0]
    assert section.details["slow_brokers"][0]["peers_median"] == 8.4
    assert section.details["expected"] == [1, 2, 3]


def test_worse_status_is_kept() -> None:
    crit = Section("brokers", Status.CRIT, "2/3 brokers answer", culprits=(3,))
    section = add_slow_brokers(crit, parse_slow_brokers(TEXT, "dev"))
    assert section.status is Status.CRIT and section.culprits == (3, 2)


def test_no_run_leaves_the_section_alone() -> None:
    section = add_slow_brokers(BROKERS, NotAvailable("no kafka-pulse run answers"))
    assert section.status is Status.OK and section.details["slow_brokers"] == []
