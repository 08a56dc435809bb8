"""Broker JMX metrics and cluster state from the Admin API, exposed to Prometheus (issue #3).

Flow: `transport` (JMX reads) -> `mapping` (jmx_exporter/Strimzi names, pure) -> `scrapers` (a thread per broker)
-> `collector` (prometheus_client Collectors); `cluster_state` reads the Admin API; `service` composes them.
"""

from collectors.catalogue import BeanQuery, Reading, TopicSelection, scrape_plan
from collectors.cluster_state import ClusterHealth, Diagnosis, Scope, assess, diagnose_under_replicated
from collectors.collector import ClusterStateCollector, JmxCollector
from collectors.mapping import BrokerIdentity, map_readings
from collectors.service import CollectorService
from collectors.transport import JmxqueryTransport, JmxTimeout, JmxTransport, JmxUnreachable, JpypeTransport

__all__ = [
    "BeanQuery",
    "BrokerIdentity",
    "ClusterHealth",
    "ClusterStateCollector",
    "CollectorService",
    "Diagnosis",
    "JmxCollector",
    "JmxTimeout",
    "JmxTransport",
    "JmxUnreachable",
    "JmxqueryTransport",
    "JpypeTransport",
    "Reading",
    "Scope",
    "TopicSelection",
    "assess",
    "diagnose_under_replicated",
    "map_readings",
    "scrape_plan",
]
