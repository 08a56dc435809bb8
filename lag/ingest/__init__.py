"""Ingest, the first stage: reads HWMs and committed offsets from Kafka (or the Admin API) into the store."""
