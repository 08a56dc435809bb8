"""Kafka wire-level pieces that more than one layer needs: the canary probe record's format, the per-broker
ApiVersions probe and a partition as the metadata describes it. The canary and `kafka-pulse check` both build on
them, so neither reaches into the other."""

__all__: list[str] = []
