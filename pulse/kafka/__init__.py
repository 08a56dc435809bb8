"""Kafka wire-level pieces that more than one layer needs, so neither the components nor `check` reach into each
other: the canary probe record's format (probe_payload), the per-broker ApiVersions probe (broker_probe), a
partition as the metadata describes it (partitions), log offsets read through a consumer (offsets), and the reads
librdkafka lacks, through kafka-python's admin client (admin_client): the KRaft quorum (quorum), eligible leader
replicas (elr), tiered topics (remote_tier), share groups (share_groups, share_stall) and streams groups
(streams_groups)."""

__all__: list[str] = []
