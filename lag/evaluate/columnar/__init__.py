"""The columnar path of evaluate: many groups' windows as numpy blocks, decided with array operations."""
