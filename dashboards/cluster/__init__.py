"""The cluster overview dashboard, one module per group of rows:

queries.py     the `$cluster`/`$broker` selectors and per-broker aggregations every row uses
health.py      health at a glance and the slow-broker verdicts
replicas.py    balance (partitions and leaders per broker) and replication
traffic.py     throughput, requests and message conversions
controller.py  the controller (JMX)
kraft.py       the KRaft quorum (DescribeQuorum and JMX)
resources.py   the brokers' JVM and OS, and kafka-pulse's own JMX scrapes
dashboard.py   `overview`: the variables and the rows in order
"""

from dashboards.cluster.dashboard import overview

__all__ = ["overview"]
