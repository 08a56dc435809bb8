"""kafka-pulse's base layer: config models, errors, the HTTP stack, the alert sink, Parquet logs, Kafka connection
profiles, paths and processes. It imports nothing of the project; every component and the application build on it.
"""

__all__: list[str] = []
