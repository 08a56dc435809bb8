"""The shard's own families: which shard this `collect` process is and what it scrapes, so the shards of a fleet
can be checked against each other in PromQL (every broker owned once, cluster state from one shard)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectors.shard import ShardPlan


class ShardCollector(Collector):
    """`kafka_pulse_collectors_shard_*`: fixed at start, since the plan comes from the config alone."""

    def __init__(self, plan: ShardPlan) -> None:
        self.plan = plan

    def collect(self) -> Iterator[Metric]:
        shard = str(self.plan.shard.index)
        info = GaugeMetricFamily(
            "kafka_pulse_collectors_shard_info",
            "1, labelled with this collector's shard (collectors.shard.index) and the shard count.",
            labels=["shard", "shard_count"],
        )
        info.add_metric([shard, str(self.plan.shard.count)], 1.0)
        yield info
        brokers = GaugeMetricFamily(
            "kafka_pulse_collectors_shard_broker",
            "1 for each configured JMX broker this shard scrapes.",
            labels=["cluster", "broker", "shard"],
        )
        for cluster, broker in self.plan.brokers:
            brokers.add_metric([cluster, str(broker), shard], 1.0)
        yield brokers
        states = GaugeMetricFamily(
            "kafka_pulse_collectors_shard_cluster_state",
            "1 for each cluster whose Admin API state (kafka_pulse_cluster_*) this shard exports.",
            labels=["cluster", "shard"],
        )
        for cluster in self.plan.cluster_states:
            states.add_metric([cluster, shard], 1.0)
        yield states
        clients = GaugeMetricFamily(
            "kafka_pulse_collectors_shard_client_target",
            "1 for each client target (collectors.clients) this shard scrapes.",
            labels=["client_target", "shard"],
        )
        for name in self.plan.clients:
            clients.add_metric([name, shard], 1.0)
        yield clients
