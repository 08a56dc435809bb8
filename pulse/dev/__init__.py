"""The local development stack: Kafka clusters from Maven Central jars, and the services tests run beside them."""

__all__: list[str] = []
