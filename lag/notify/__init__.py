"""Notify, an output stage: Alertmanager incidents for groups that turn bad, and the Parquet evaluation log."""
