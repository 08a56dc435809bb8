"""Consult, beside the probes: what a running `kafka-pulse run` (or `--lag-url` evaluator) has already judged over
minutes, which one check cannot: read from its /metrics, Burrow routes or findings table and folded into sections."""
