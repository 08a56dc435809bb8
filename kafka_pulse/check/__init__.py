"""`kafka-pulse check`: is Kafka OK, and if not, what is wrong, within a deadline.

Flow: probes (`kafka_probes`, `round_trip`, `slo_budgets`; I/O, each bounded by `deadline`) -> `facts` ->
`verdict`, `partition_verdict` and `round_trip_verdict` (pure: one OK/WARN/CRIT/UNKNOWN/INFO section per question,
the overall status and exit code) -> `render` (JSON and the rich table). `health_check.run_check` composes them.
Modules are imported on use, so the pure verdicts load without a Kafka client.
"""

__all__ = [
    "deadline",
    "facts",
    "health_check",
    "kafka_probes",
    "lag_summary",
    "partition_verdict",
    "render",
    "round_trip",
    "round_trip_verdict",
    "slo_budgets",
    "verdict",
]
