"""The report's sections assembled from facts (pure): the one place that orders the judgements of
judge/verdict.py, judge/partition_verdict.py and judge/round_trip_verdict.py, whether the facts come from `check`'s
own probes (health_check.py) or from the readings of the process the status page runs in
(kafka_pulse/status/readings.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_pulse.check.consult.noisy_neighbours import NoisyNeighbourFacts, add_noisy_neighbours
from kafka_pulse.check.consult.slow_brokers import SlowBrokerFacts, add_slow_brokers
from kafka_pulse.check.facts import BrokerProbe, MetadataFacts, NotAvailable, ProbeFailed, QuorumFacts, RoundTripFacts
from kafka_pulse.check.judge.partition_verdict import judge_partitions
from kafka_pulse.check.judge.round_trip_verdict import judge_round_trip
from kafka_pulse.check.judge.verdict import UNASKED, Section, judge_brokers, judge_controller


def judged_sections(
    meta: MetadataFacts | ProbeFailed,
    probes: Mapping[int, BrokerProbe],
    quorum: QuorumFacts | ProbeFailed | NotAvailable,
    trips: RoundTripFacts | ProbeFailed | NotAvailable,
    lag: Section,
    slow: SlowBrokerFacts,
    neighbours: NoisyNeighbourFacts,
    slo: Section,
    own: Section,
    unasked: str = UNASKED,
) -> tuple[Section, ...]:
    """The report's sections, in order, from the facts gathered: by this check's probes, or from the readings of
    the process the status page runs in (kafka_pulse/status/readings.py). A broker without an entry in `probes`
    was not asked (`unasked` says why); a round trip through a broker found down is charged to it."""
    registered: Mapping[int, object] = meta.brokers if isinstance(meta, MetadataFacts) else {}
    unhealthy = (
        {b for b in meta.expected if b not in meta.brokers or (b in probes and not probes[b].ok)}
        if isinstance(meta, MetadataFacts)
        else set()
    )
    return (
        add_slow_brokers(judge_brokers(meta, probes, unasked), slow),
        judge_controller(quorum),
        judge_partitions(meta),
        judge_round_trip(trips, registered, unhealthy),
        add_noisy_neighbours(lag, neighbours),
        slo,
        own,
    )
