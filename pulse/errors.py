"""The errors kafka-pulse raises; the CLI catches PulseError once and prints `Type: message`.

PulseError
 ├── ConfigError            a config file or option is invalid (names the key path)
 ├── DependencyMissing      a program or package the command needs is not installed
 ├── ProcessFailed          a child process (Kafka, Prometheus, Maven, ...) exited or never became ready
 ├── ClusterError           the dev cluster's state is missing or inconsistent
 ├── KafkaUnavailable       a Kafka cluster could not be reached
 │    └── AuthenticationFailed   the cluster refused our credentials
 └── NotImplementedYet      a command of the public CLI that is not implemented yet
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


class NotImplementedYet(PulseError):
    """A command that is part of the public CLI but is not implemented yet."""
