"""Probe, the first stage: the check's own reads of Kafka and of the SLO job's results, each bounded by the
deadline, giving facts (../facts.py) or `ProbeFailed`, never a verdict."""
