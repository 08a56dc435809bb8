"""The errors kafka-pulse raises; the CLI catches PulseError once and prints `Type: message`.

The base defines the first level; a component or the application derives its own errors where it raises them
(module in brackets). tests/unit/architecture/test_error_tree.py keeps this drawing the whole tree.

PulseError
 ├── ConfigError               a config file or option is invalid (names the key path)
 │    ├── InvalidSpec          an SLO spec is refused, every problem with its key path   [slo/spec.py]
 │    ├── RulesRefused         an SLO cannot become Prometheus rules as specified        [slo/rules.py]
 │    ├── NoPrometheusSli      no SLO reads Prometheus, so there are no rules to generate [slo/rules_files.py]
 │    └── SpoolInUse           another process delivers from this SLI sink spool        [pulse/sli_sink/sink.py]
 ├── DependencyMissing         a program or package the command needs is not installed
 ├── ProcessFailed             a child process (Kafka, Prometheus, Maven, ...) exited or never became ready
 ├── ClusterError              the dev cluster's state is missing or inconsistent
 ├── KafkaUnavailable          a Kafka cluster could not be reached
 │    ├── AuthenticationFailed the cluster refused our credentials
 │    └── ClusterStateTimeout  the cluster-state read ran out of time                    [collectors/cluster_state.py]
 ├── JmxUnreachable            a broker's JMX endpoint refused the connection or query   [collectors/transport.py]
 │    └── JmxTimeout           a broker's JMX endpoint did not answer in time            [collectors/transport.py]
 ├── SourceUnreadable          an SLO's source could not be read or does not fit its rows [slo/sources.py]
 ├── PushFailed                the Pushgateway could not be reached or refused the push  [slo/output.py]
 ├── PromtoolFailed            promtool refused a generated rules file or a unit test    [slo/rules_files.py]
 ├── PollTimeout               an awaited state was not reached in time; shows the last value [pulse/polling.py]
 │    └── ServiceTimeout       a dev-stack service did not reach the awaited state in time [devstack/services.py]
 ├── QueryFailed               a dev-stack service answered an API call with an error    [devstack/services.py]
 ├── ReplayInputInvalid        lines of the `lag replay` input were malformed            [kafka_pulse/cli/lag.py]
 └── BudgetSpent               `check`'s time budget was gone before it asked anything   [kafka_pulse/cli/check.py]
"""


class PulseError(Exception):
    """Base of every error kafka-pulse reports to the user."""


class ConfigError(PulseError):
    """A config file or command-line option is invalid."""


class DependencyMissing(PulseError):
    """A program or package the command needs is not installed."""


class ProcessFailed(PulseError):
    """A child process exited early or did not become ready in time."""


class ClusterError(PulseError):
    """The local dev cluster's state is missing or inconsistent."""


class KafkaUnavailable(PulseError):
    """A Kafka cluster could not be reached."""


class AuthenticationFailed(KafkaUnavailable):
    """A Kafka cluster refused the configured credentials."""
