"""Config section `collectors:`: the JMX and Admin API collectors, and the JVM clients they scrape."""

from typing import Annotated, Literal, Self

from pydantic import Field, SecretStr, model_validator

from pulse.config.clusters import JmxEndpoint
from pulse.config.types import ExistingFile, Name, PositiveSeconds, Regex, Section, unique_by
from pulse.envsubst import config_problem


class JmxClientConfig(JmxEndpoint):
    """A JVM Kafka client's JMX endpoint (producer, consumer, MirrorMaker 2), scraped for client-side metrics; trust
    for `ssl: true` comes from its own `truststore`."""

    name: Name
    """Unique among `collectors.clients`; the `client_target` label of every sample and health series."""
    truststore: ExistingFile | None = None
    """JKS or PKCS12 trust store for this client's JMX over TLS (needs `ssl: true`)."""
    truststore_password: SecretStr | None = None
    """Password of `truststore`."""
    cluster: Name | None = None
    """The Kafka cluster the client talks to: a `cluster` label on its samples; absent means no such label."""
    timeout_s: PositiveSeconds = 5.0
    """Limit for one scrape of this client; a slower answer counts as a failed scrape (`reason="timeout"`)."""

    @model_validator(mode="after")
    def _trust_needs_tls(self) -> Self:
        if self.truststore is not None and not self.ssl:
            raise config_problem("set ssl: true to use a trust store (JMX over TLS)", ("ssl",))
        return self


class ShardConfig(Section):
    """This process's share of the collectors' work when `count` `collect` processes split the brokers between
    them (collectors/shard.py: rendezvous hashing, each broker scraped by exactly one shard)."""

    index: int = Field(ge=0)
    """This process's shard, 0 to `count` - 1; every shard of a fleet runs with the same `count`."""
    count: int = Field(ge=1)
    """How many `collect` processes share the brokers; 1 (the default) scrapes everything."""

    @model_validator(mode="after")
    def _index_below_count(self) -> Self:
        if self.index >= self.count:
            raise config_problem(
                f"{self.index} is not a shard of {self.count}: shards are numbered 0 to {self.count - 1}", ("index",)
            )
        return self


class CollectorsConfig(Section):
    """JMX and Admin API collectors (collectors/)."""

    enabled: bool = True
    """Run the collectors in `run`; off leaves them out of the suite."""
    scrape_interval_s: PositiveSeconds = 15.0
    """How often brokers, clients and cluster state are read; /metrics serves the last result."""
    admin_timeout_s: PositiveSeconds | None = None
    """Time limit of one cluster-state read (metadata, describe_cluster, topic configs). Default: 10 s plus 2 ms a
    partition the read's metadata lists (30 s at 10,000 partitions, where a loaded host needed 11-26 s). A read the
    kept Admin client has not finished in 3 times the previous read's time (at least 2 s, at most half this limit,
    a limit of 4 s or more) is done again on a fresh client in the time left (docs/kafka-clients.md)."""
    transport: Literal["jmxquery", "jpype"] = "jpype"
    """`jpype` keeps one JMX connection per broker in-process: a tenth of jmxquery's scrape time and CPU, and JMX login
    and TLS (docs/benchmarks.md); `jmxquery` forks a JVM per scrape and cannot take credentials off its argv."""
    topic_metrics: Literal["off", "topic", "partition"] = "off"
    """Per-topic JMX beans (`topic`: BrokerTopicMetrics per topic; `partition`: also Log and Partition beans per
    partition), filtered by `topic_allow`/`topic_deny`; off by default because they grow with the topic count."""
    topic_allow: Regex = ".*"
    """Topics whose per-topic beans are exported (`re.search`); only with `topic_metrics` on."""
    topic_deny: Regex | None = None
    """Topics left out even when `topic_allow` matches them."""
    clients: Annotated[list[JmxClientConfig], unique_by(lambda c: c.name, "name", "client name", "clients")] = Field(
        default_factory=list
    )
    """JVM clients to scrape over JMX (producer, consumer and MirrorMaker 2 metrics), with the same transport."""
    shard: ShardConfig = ShardConfig(index=0, count=1)
    """Split brokers, client targets and cluster state over `count` processes; the default is one process for all."""
