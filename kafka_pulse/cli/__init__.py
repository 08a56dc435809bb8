"""The `kafka-pulse` command line: one module per command group, each thin (parse, load, call, render)."""

__all__: list[str] = []
