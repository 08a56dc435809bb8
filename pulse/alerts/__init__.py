"""Alerts to Alertmanager's v2 API, shared by every component that alerts (slo/, lag/); docs/alerting.md explains
the contract. One module per part, read in this order:

    message.py    `Alert` (postableAlert), its identity, `supersede`
    incidents.py  `Incidents`: which alerts are open, resent every cycle with a moving `endsAt`
    spool.py      the bounded on-disk spool (generic over what it holds)
    sink.py       `AlertSink` (POST /api/v2/alerts, else spool) and the `AlertSender` seam components use
    metrics.py    `AlertSinkCollector`: the sink's counters

In short:

    sink = AlertSink("http://127.0.0.1:9093", spool_dir)          # one per process; thread-safe
    incidents = Incidents(resend_interval_s=60)                    # one per alerting component
    every cycle:
        sink.send(incidents.reconcile(firing_alerts, now=utc_now()))
"""

from pulse.alerts.incidents import Incidents
from pulse.alerts.message import Alert, Identity, identity, render_link, supersede, utc_now
from pulse.alerts.metrics import AlertSinkCollector
from pulse.alerts.sink import (
    SPOOL_FORMAT,
    AlertCodec,
    AlertSender,
    AlertSink,
    AlertSpool,
    DropReason,
    SendResult,
    SinkStats,
)

__all__ = [
    "SPOOL_FORMAT",
    "Alert",
    "AlertCodec",
    "AlertSender",
    "AlertSink",
    "AlertSinkCollector",
    "AlertSpool",
    "DropReason",
    "Identity",
    "Incidents",
    "SendResult",
    "SinkStats",
    "identity",
    "render_link",
    "supersede",
    "utc_now",
]
