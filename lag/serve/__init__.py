"""Serve, an output stage: the Burrow v3 HTTP routes and JSON, and the /metrics families, from the verdicts."""
