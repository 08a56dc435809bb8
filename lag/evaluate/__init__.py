"""Evaluate, over the store: Burrow's rules (scalar contract and columnar path) and time lag, giving verdicts."""
