"""The kafka-pulse config file: YAML -> `${VAR}` substitution -> pydantic models, refused whole before anything starts.

One module per section; every component receives its section of `PulseConfig` and none reads the file or the
environment itself. What other modules import is re-exported here, so `from pulse.config import X` is the one way in.
"""

from pulse.config.alerting import AlertingConfig
from pulse.config.audit import AuditConfig, AuditLogConfig, AuditReconcileConfig
from pulse.config.canary import CanaryConfig, CanaryMirrorConfig, SliLogConfig
from pulse.config.clusters import (
    ClusterConfig,
    JmxBrokerConfig,
    JmxConfig,
    JmxEndpoint,
    SaslConfig,
    SecurityConfig,
    TlsConfig,
)
from pulse.config.collectors import CollectorsConfig, JmxClientConfig, ShardConfig
from pulse.config.dashboards import DashboardsConfig
from pulse.config.field_docs import field_docs
from pulse.config.http import BasicAuthConfig, HttpConfig, HttpTlsConfig
from pulse.config.lag import (
    ExactTimeLagConfig,
    IngestionMode,
    LagConfig,
    LagEvaluationLogConfig,
    LagMode,
    LagNotifyConfig,
    PageCacheConfig,
    ShareGroupsConfig,
    StreamsGroupsConfig,
)
from pulse.config.load import check_section, load_config, parse_config
from pulse.config.outbound import HttpClientConfig
from pulse.config.root import PulseConfig
from pulse.config.sli_sink import SliSinkConfig
from pulse.config.slo import (
    AlertPolicySpec,
    AlertTierSpec,
    BurnWindowSpec,
    CalendarWindowSpec,
    EventsSourceSpec,
    OpenSloDocument,
    PrometheusSourceSpec,
    SloConfig,
    SloEntry,
    SloSpec,
    TimesliceSpec,
)
from pulse.config.slow_brokers import SlowBrokersConfig
from pulse.config.types import ExistingFile, HostPort, HttpUrl, Name, Regex, TopicName, split_host_port

__all__ = [
    "AlertPolicySpec",
    "AlertTierSpec",
    "AlertingConfig",
    "AuditConfig",
    "AuditLogConfig",
    "AuditReconcileConfig",
    "BasicAuthConfig",
    "BurnWindowSpec",
    "CalendarWindowSpec",
    "CanaryConfig",
    "CanaryMirrorConfig",
    "ClusterConfig",
    "CollectorsConfig",
    "DashboardsConfig",
    "EventsSourceSpec",
    "ExactTimeLagConfig",
    "ExistingFile",
    "HostPort",
    "HttpClientConfig",
    "HttpConfig",
    "HttpTlsConfig",
    "HttpUrl",
    "IngestionMode",
    "JmxBrokerConfig",
    "JmxClientConfig",
    "JmxConfig",
    "JmxEndpoint",
    "LagConfig",
    "LagEvaluationLogConfig",
    "LagMode",
    "LagNotifyConfig",
    "Name",
    "OpenSloDocument",
    "PageCacheConfig",
    "PrometheusSourceSpec",
    "PulseConfig",
    "Regex",
    "SaslConfig",
    "SecurityConfig",
    "ShardConfig",
    "ShareGroupsConfig",
    "SliLogConfig",
    "SliSinkConfig",
    "SloConfig",
    "SloEntry",
    "SloSpec",
    "SlowBrokersConfig",
    "StreamsGroupsConfig",
    "TimesliceSpec",
    "TlsConfig",
    "TopicName",
    "check_section",
    "field_docs",
    "load_config",
    "parse_config",
    "split_host_port",
]
