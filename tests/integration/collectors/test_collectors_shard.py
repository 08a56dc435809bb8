"""Two collector shards on the real 3-node cluster: between them every broker is scraped once, and the
cluster-wide state comes from one of them (collectors/shard.py, `collectors.shard`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.service import CollectorService
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import parse_config
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration

Series = dict[str, list[dict[str, str]]]
"""Family name -> the label sets of its samples, as one shard's /metrics text says."""


def shard_collector(kafka: KafkaHandle, index: int) -> tuple[CollectorService, CollectorRegistry]:
    """A collector built the way `collect` builds it, from a config file's text with `collectors.shard`."""
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    text = yaml.safe_dump(
        {
            "clusters": [cluster],
            "collectors": {"transport": "jpype", "scrape_interval_s": 1, "shard": {"index": index, "count": 2}},
        }
    )
    config = parse_config(text, "pulse.yaml", {})
    registry = CollectorRegistry()
    service = CollectorService(config.clusters, config.collectors)
    service.register(registry)
    return service, registry


@pytest.fixture
def shards(kafka: KafkaHandle) -> Iterator[list[tuple[CollectorService, CollectorRegistry]]]:
    built = [shard_collector(kafka, index) for index in (0, 1)]
    try:
        for service, _ in built:
            service.start()
        for service, _ in built:
            for scraper in service.brokers.values():
                scraper.wait_for(lambda r: r.ok, 60)
        yield built
    finally:
        for service, _ in built:
            service.stop()


def series(registry: CollectorRegistry) -> Series:
    text = generate_latest(registry).decode()
    return {f.name: [dict(s.labels) for s in f.samples] for f in text_string_to_metric_families(text)}


def brokers_of(families: Series, name: str) -> set[str]:
    return {labels["broker"] for labels in families.get(name, [])}


def test_two_shards_scrape_every_broker_once_and_cluster_state_once(
    kafka: KafkaHandle, shards: list[tuple[CollectorService, CollectorRegistry]]
) -> None:
    metadata = kafka.admin().list_topics(timeout=10)
    all_brokers = {str(b) for b in metadata.brokers}
    assert len(all_brokers) == 3
    exposed = [series(registry) for _, registry in shards]

    scraped = [brokers_of(f, "kafka_pulse_jmx_up") for f in exposed]
    assert all(scraped), f"each shard should own a broker of 'dev' (rendezvous split {scraped})"
    assert scraped[0] | scraped[1] == all_brokers
    assert scraped[0] & scraped[1] == set()
    for index, families in enumerate(exposed):
        # Broker families come from the owned brokers only, and the shard's own families say which they are.
        assert brokers_of(families, "kafka_server_kafkaserver_brokerstate") == scraped[index]
        assert brokers_of(families, "kafka_pulse_collectors_shard_broker") == scraped[index]
        assert families["kafka_pulse_collectors_shard_info"] == [{"shard": str(index), "shard_count": "2"}]
        # A shard that leaves the cluster state to the other still labels its samples with the brokers' racks.
        racks = {labels["broker"]: labels["rack"] for labels in families["kafka_pulse_jmx_up"]}
        assert racks == {b: kafka.cluster.node(int(b)).rack or "" for b in scraped[index]}
        assert all(racks.values())

    state_families = {
        "kafka_pulse_cluster_state_up",
        "kafka_pulse_cluster_partitions",
        "kafka_pulse_cluster_controller",
    }
    readers = [i for i, f in enumerate(exposed) if any(f.get(name) for name in state_families)]
    assert len(readers) == 1, readers
    (reader,) = readers
    assert exposed[reader]["kafka_pulse_collectors_shard_cluster_state"] == [{"cluster": "dev", "shard": str(reader)}]
    assert exposed[1 - reader]["kafka_pulse_collectors_shard_cluster_state"] == []
    assert not any(name.startswith("kafka_pulse_cluster_") and samples for name, samples in exposed[1 - reader].items())
    # The cluster state's broker table still covers every broker, whichever shard scrapes its JMX.
    assert brokers_of(exposed[reader], "kafka_pulse_cluster_broker_present") == all_brokers
