"""Data-flow audit (docs/audit.md): did every record produced reach every consumer group, and when.

Broker side, no application changed: `minutes` (boundary offsets and commits -> per group, topic and minute;
pure) <- `broker` (reads Kafka each cycle) -> `broker_log` (Parquet, an SLO's `audit` source); `service` runs the
cycles in `kafka-pulse run`. Client side, a library for confluent-kafka applications: `counts` (per topic and
minute of event time; pure) <- `client` (producer and consumer wrappers, the reporter). Both publish through the
SLI sink in the schemas of `streams`. Reconciliation of the two: `reconcile` (the rules; pure) <- `reconcile_spark`
(the same rules as Spark plans) <- `reconcile_stream` (the streaming query) -> `findings_log` (Parquet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulse.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from audit.broker import BrokerAudit
    from audit.broker_log import BROKER_ROWS, BrokerLog, BrokerLogCollector
    from audit.client import AuditedProducer, AuditReporter, ConsumerAudit
    from audit.counts import ClientCounts
    from audit.findings_alerts import HOLD_S, incident_alerts
    from audit.findings_log import FINDINGS_ROWS, FindingsLog, FindingsLogCollector
    from audit.minutes import MinuteAudit, MinuteBook
    from audit.reconcile import KINDS, Finding, Reconciler, describe
    from audit.reconcile_spark import count_rows
    from audit.reconcile_stream import Judged, ReconcileStream
    from audit.service import AuditCollector, AuditService, build_audit
    from audit.streams import BROKER_STREAM, CLIENT_STREAM, ClientOrigin

__all__ = [
    "BROKER_ROWS",
    "BROKER_STREAM",
    "CLIENT_STREAM",
    "FINDINGS_ROWS",
    "HOLD_S",
    "KINDS",
    "AuditCollector",
    "AuditReporter",
    "AuditService",
    "AuditedProducer",
    "BrokerAudit",
    "BrokerLog",
    "BrokerLogCollector",
    "ClientCounts",
    "ClientOrigin",
    "ConsumerAudit",
    "Finding",
    "FindingsLog",
    "FindingsLogCollector",
    "Judged",
    "MinuteAudit",
    "MinuteBook",
    "ReconcileStream",
    "Reconciler",
    "build_audit",
    "count_rows",
    "describe",
    "incident_alerts",
]

_HOMES = {
    "BROKER_ROWS": "audit.broker_log",
    "BROKER_STREAM": "audit.streams",
    "CLIENT_STREAM": "audit.streams",
    "FINDINGS_ROWS": "audit.findings_log",
    "AuditCollector": "audit.service",
    "AuditReporter": "audit.client",
    "AuditService": "audit.service",
    "AuditedProducer": "audit.client",
    "BrokerAudit": "audit.broker",
    "BrokerLog": "audit.broker_log",
    "BrokerLogCollector": "audit.broker_log",
    "ClientCounts": "audit.counts",
    "ClientOrigin": "audit.streams",
    "ConsumerAudit": "audit.client",
    "Finding": "audit.reconcile",
    "FindingsLog": "audit.findings_log",
    "FindingsLogCollector": "audit.findings_log",
    "HOLD_S": "audit.findings_alerts",
    "Judged": "audit.reconcile_stream",
    "KINDS": "audit.reconcile",
    "MinuteAudit": "audit.minutes",
    "MinuteBook": "audit.minutes",
    "ReconcileStream": "audit.reconcile_stream",
    "Reconciler": "audit.reconcile",
    "build_audit": "audit.service",
    "count_rows": "audit.reconcile_spark",
    "describe": "audit.reconcile",
    "incident_alerts": "audit.findings_alerts",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562)."""

if not TYPE_CHECKING:
    __getattr__ = lazy_exports(__name__, _HOMES)
