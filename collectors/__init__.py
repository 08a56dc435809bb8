"""Broker and client JMX metrics and cluster state from the Admin API, exposed to Prometheus.

Flow: `transport` (JMX reads) -> `mapping` (jmx_exporter/Strimzi names, pure) -> `scrapers` (a thread per broker)
-> `collector` (prometheus_client Collectors); `cluster_state` reads the Admin API; `clients` scrapes the JVM
clients an operator lists the same way; `service` composes them.
"""

from collectors.catalogue import CLIENT_BEANS, BeanQuery, Reading, TopicSelection, scrape_plan
from collectors.clients import ClientTransport, client_scraper, open_client_transport
from collectors.cluster_state import ClusterHealth, Diagnosis, Scope, assess, diagnose_under_replicated
from collectors.collector import ClusterStateCollector, JmxCollector
from collectors.mapping import BrokerIdentity, ClientIdentity, map_readings
from collectors.service import CollectorService
from collectors.transport import JmxqueryTransport, JmxTimeout, JmxTransport, JmxUnreachable, JpypeTransport

__all__ = [
    "CLIENT_BEANS",
    "BeanQuery",
    "BrokerIdentity",
    "ClientIdentity",
    "ClientTransport",
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
    "client_scraper",
    "diagnose_under_replicated",
    "map_readings",
    "open_client_transport",
    "scrape_plan",
]
