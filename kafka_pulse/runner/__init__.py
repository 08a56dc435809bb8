"""`kafka-pulse run`: every component in one process. `suite.Suite` composes collectors, canary, lag and
`slo_schedule.SloSchedule` on one registry and one listener; `demo` runs the README's demo around it."""

__all__ = ["demo", "slo_schedule", "suite"]
