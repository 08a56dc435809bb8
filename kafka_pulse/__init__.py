"""kafka-pulse's application layer: the CLI, `run`, `check` and the demo, composing the components over the base."""
