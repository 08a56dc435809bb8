"""`kafka-pulse check`: is Kafka OK, and if not, what is wrong, within a deadline.

Stages, one package each: `probe` (Kafka reads, the round trip, the SLO results; I/O, each bounded by `deadline`)
-> `facts` -> `judge` (pure: one OK/WARN/CRIT/UNKNOWN/INFO section per question, the overall status and exit code);
`consult` reads what a running `run` already judged (self, slow brokers, noisy neighbours, lag verdicts, audit
findings). `sections` orders the judgements, `render` prints them (JSON and the rich table), and
`health_check.run_check` composes it all. Modules are imported on use, so the pure verdicts load without a Kafka
client.
"""

__all__ = [
    "consult",
    "deadline",
    "facts",
    "health_check",
    "judge",
    "probe",
    "render",
    "sections",
]
