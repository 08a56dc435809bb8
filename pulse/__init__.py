"""kafka-pulse's shell: config, CLI, process runner, Kafka connection profiles and the local dev cluster.

Every component package (collectors, canary, lag, slo, dashboards) depends on this package and on no other.
"""

__all__: list[str] = []
