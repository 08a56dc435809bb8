"""Config file validation: one valid config, broken one key at a time, after Sloth's tables.

Each row names the exact message line the operator sees: `<file>: <key path>: <reason>`.
"""

import copy
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from pulse.config import ClusterConfig, PulseConfig, SloSpec, load_config, parse_config, split_host_port
from pulse.errors import ConfigError
from tests.support.config_edits import Case, both, delete_key, refusal_lines, set_key

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ENVIRON = {"KAFKA_PASSWORD": "hunter2-kafka"}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A config directory holding the TLS files the valid config names (relative to it)."""
    for name in ("ca.pem", "client.crt", "client.key"):
        (tmp_path / name).write_text("-----BEGIN PLACEHOLDER-----\n")
    return tmp_path


def valid_config() -> dict[str, Any]:
    """The one valid config every case starts from; it exercises every section that has rules."""
    return {
        "clusters": [
            {
                "name": "prod",
                "bootstrap_servers": ["kafka1:9093", "kafka2:9093"],
                "security": {
                    "protocol": "SASL_SSL",
                    "sasl": {"mechanism": "SCRAM-SHA-512", "username": "pulse", "password": "${KAFKA_PASSWORD}"},
                    "tls": {"ca_file": "ca.pem"},
                },
                "jmx": {
                    "brokers": [
                        {"broker_id": 1, "host": "kafka1", "port": 9999, "username": "monitor", "password": "jmx"},
                        {"broker_id": 2, "host": "kafka2", "port": 9999, "username": "monitor", "password": "jmx"},
                    ]
                },
            }
        ],
        "collectors": {"topic_deny": "^__"},
        "lag": {"group_deny": "^console-consumer-"},
        "alerting": {"enabled": True, "alertmanager_url": "http://127.0.0.1:9093"},
        "http": {"listen": "127.0.0.1:9308"},
    }


def parse(tree: dict[str, Any], base_dir: Path, environ: dict[str, str] = ENVIRON) -> PulseConfig:
    return parse_config(yaml.safe_dump(tree), "pulse.yaml", environ, base_dir=base_dir)


def test_valid_config_parses(files: Path) -> None:
    config = parse(valid_config(), files)
    cluster = config.cluster("prod")
    assert cluster.bootstrap_servers == ["kafka1:9093", "kafka2:9093"]
    assert cluster.security.sasl is not None
    assert cluster.security.sasl.password.get_secret_value() == "hunter2-kafka"
    assert cluster.security.tls is not None
    assert cluster.security.tls.ca_file == files / "ca.pem"  # relative to the config file's directory


# --- the validation table ---------------------------------------------------------------------------------------


def _cluster(tree: dict[str, Any]) -> dict[str, Any]:
    cluster: dict[str, Any] = tree["clusters"][0]
    return cluster


SECURITY = ("clusters", 0, "security")
BROKERS = ("clusters", 0, "jmx", "brokers")
BOOTSTRAP = ("clusters", 0, "bootstrap_servers")

CASES = [
    # Types.
    pytest.param(
        Case(
            set_key("collectors", "scrape_interval_s", value="fast"),
            "collectors.scrape_interval_s: Input should be a valid number, unable to parse string as a number "
            "(got 'fast')",
        ),
        id="wrong-type-number",
    ),
    pytest.param(
        Case(set_key("clusters", value={"name": "prod"}), "clusters: Input should be a valid list"),
        id="wrong-type-clusters-not-a-list",
    ),
    pytest.param(
        Case(
            set_key("canary", "enabled", value="maybe"),
            "canary.enabled: Input should be a valid boolean, unable to interpret input (got 'maybe')",
        ),
        id="wrong-type-bool",
    ),
    # A secret of the wrong type is refused without echoing it.
    pytest.param(
        Case(
            set_key(*SECURITY, "sasl", "password", value=123456),
            "clusters[0].security.sasl.password: Input should be a valid string",
        ),
        id="wrong-type-secret-not-echoed",
    ),
    # Unknown keys, with the likely fix.
    pytest.param(
        Case(set_key("colectors", value={}), "(top level): unknown key 'colectors'; did you mean 'collectors'?"),
        id="unknown-key-top-level",
    ),
    pytest.param(
        Case(
            set_key("clusters", 0, "bootstrap_server", value="kafka3:9093"),
            "clusters[0]: unknown key 'bootstrap_server'; did you mean 'bootstrap_servers'?",
        ),
        id="unknown-key-nested",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "tls", "insecure", value=True),
            "clusters[0].security.tls: unknown key 'insecure'; "
            "known keys: ca_file, cert_file, key_file, key_password, verify_hostname",
        ),
        id="unknown-key-deep-lists-known-keys",
    ),
    # Bootstrap servers.
    pytest.param(
        Case(delete_key(*BOOTSTRAP), "clusters[0].bootstrap_servers: required key is missing"), id="bootstrap-missing"
    ),
    pytest.param(
        Case(set_key(*BOOTSTRAP, value=[]), "clusters[0].bootstrap_servers: at least one host:port is required"),
        id="bootstrap-empty-list",
    ),
    pytest.param(
        Case(
            set_key(*BOOTSTRAP, value=["kafka1:9093", "kafka2"]),
            "clusters[0].bootstrap_servers[1]: 'kafka2' is not host:port (e.g. kafka1:9092)",
        ),
        id="bootstrap-not-host-port",
    ),
    pytest.param(
        Case(
            set_key(*BOOTSTRAP, value="kafka1:9093, kafka2"),
            "clusters[0].bootstrap_servers[1]: 'kafka2' is not host:port (e.g. kafka1:9092)",
        ),
        id="bootstrap-comma-string-bad-item",
    ),
    pytest.param(
        Case(
            set_key(*BOOTSTRAP, value=["kafka1:9093", "kafka2:70000"]),
            "clusters[0].bootstrap_servers[1]: 'kafka2:70000': port 70000 is out of range 1-65535",
        ),
        id="bootstrap-port-out-of-range",
    ),
    pytest.param(
        Case(
            set_key(*BOOTSTRAP, value=["kafka1:ssl"]),
            "clusters[0].bootstrap_servers[0]: 'kafka1:ssl' is not host:port: port 'ssl' is not a number",
        ),
        id="bootstrap-port-not-a-number",
    ),
    # Security contradictions.
    pytest.param(
        Case(
            delete_key(*SECURITY, "sasl"),
            "clusters[0].security.sasl: required when protocol is SASL_SSL: give mechanism, username and password",
        ),
        id="sasl-ssl-without-sasl",
    ),
    pytest.param(
        Case(
            both(set_key(*SECURITY, "protocol", value="PLAINTEXT"), delete_key(*SECURITY, "tls")),
            "clusters[0].security.sasl: protocol PLAINTEXT does not use SASL; set protocol to SASL_PLAINTEXT",
        ),
        id="sasl-with-plaintext",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "protocol", value="SASL_PLAINTEXT"),
            "clusters[0].security.tls: protocol SASL_PLAINTEXT does not use TLS; set protocol to SASL_SSL",
        ),
        id="tls-with-sasl-plaintext",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "sasl", "mechanism", value="GSSAPI"),
            "clusters[0].security.sasl.mechanism: Input should be 'PLAIN', 'SCRAM-SHA-256' or 'SCRAM-SHA-512' "
            "(got 'GSSAPI')",
        ),
        id="sasl-unknown-mechanism",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "protocol", value="TLS"),
            "clusters[0].security.protocol: Input should be 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL' "
            "(got 'TLS')",
        ),
        id="unknown-protocol",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "tls", "cert_file", value="client.crt"),
            "clusters[0].security.tls.key_file: required when cert_file is set (the client certificate's private key)",
        ),
        id="cert-without-key",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "tls", "key_file", value="client.key"),
            "clusters[0].security.tls.cert_file: required when key_file is set (the client certificate)",
        ),
        id="key-without-cert",
    ),
    pytest.param(
        Case(
            set_key(*SECURITY, "tls", "ca_file", value="missing-ca.pem"),
            "clusters[0].security.tls.ca_file: file '{dir}/missing-ca.pem' does not exist",
        ),
        id="tls-file-missing",
    ),
    # Environment.
    pytest.param(
        Case(
            set_key(*SECURITY, "sasl", "password", value="${KAFKA_PASSWORD_PROD}"),
            "clusters[0].security.sasl.password: environment variable KAFKA_PASSWORD_PROD is not set",
        ),
        id="env-var-unset",
    ),
    pytest.param(
        Case(
            set_key(*BROKERS, 0, "port", value="${JMX_PORT}"),
            "clusters[0].jmx.brokers[0].port: environment variable JMX_PORT is not set",
        ),
        id="env-var-unset-no-follow-up-type-error",
    ),
    # Uniqueness.
    pytest.param(
        Case(
            lambda tree: tree["clusters"].append(copy.deepcopy(_cluster(tree))),
            "clusters[1].name: duplicate cluster name 'prod' (also clusters[0])",
        ),
        id="duplicate-cluster-name",
    ),
    pytest.param(
        Case(
            set_key(*BROKERS, 1, "broker_id", value=1),
            "clusters[0].jmx.brokers[1].broker_id: duplicate broker_id 1 (also in brokers[0])",
        ),
        id="duplicate-jmx-broker-id",
    ),
    # Names, JMX and components.
    pytest.param(
        Case(
            set_key("clusters", 0, "name", value="prod eu"),
            "clusters[0].name: 'prod eu' may only contain letters, digits, '_', '.' and '-'",
        ),
        id="cluster-name-with-space",
    ),
    pytest.param(
        Case(delete_key(*BROKERS, 0, "username"), "clusters[0].jmx.brokers[0].username: required when password is set"),
        id="jmx-password-without-username",
    ),
    pytest.param(
        Case(
            set_key(*BROKERS, 0, "broker_id", value=-1),
            "clusters[0].jmx.brokers[0].broker_id: Input should be greater than or equal to 0 (got -1)",
        ),
        id="jmx-negative-broker-id",
    ),
    pytest.param(
        Case(
            set_key("lag", "group_deny", value="(console"),
            "lag.group_deny: '(console' is not a valid regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        id="regex-does-not-compile",
    ),
    pytest.param(
        Case(
            set_key("lag", "mode", value="strict"),
            "lag.mode: Input should be 'burrow', 'burrow-1.2' or 'enhanced' (got 'strict')",
        ),
        id="lag-unknown-mode",
    ),
    pytest.param(
        Case(
            delete_key("alerting", "alertmanager_url"), "alerting.alertmanager_url: required when alerting is enabled"
        ),
        id="alerting-enabled-without-url",
    ),
    pytest.param(
        Case(
            set_key("alerting", "alertmanager_url", value="alertmanager:9093"),
            "alerting.alertmanager_url: 'alertmanager:9093' is not an http(s) URL, e.g. http://127.0.0.1:9093",
        ),
        id="alertmanager-url-not-http",
    ),
    pytest.param(
        Case(set_key("http", "listen", value="9308"), "http.listen: '9308' is not host:port (e.g. kafka1:9092)"),
        id="http-listen-not-host-port",
    ),
    pytest.param(
        Case(set_key("canary", "interval_s", value=0), "canary.interval_s: Input should be greater than 0 (got 0)"),
        id="canary-interval-zero",
    ),
    pytest.param(
        Case(
            set_key("slo", "stream_dir", value="s3://bucket/kafka-pulse"),
            "slo.stream_dir: 's3://bucket/kafka-pulse': s3:// is not a Hadoop filesystem Spark knows (one of "
            "file://, hdfs://, viewfs://, webhdfs://, swebhdfs://, s3a://, gs://, abfs://, abfss://, wasb://, "
            "wasbs://, oss://, cosn://, ofs://, o3fs://)",
        ),
        id="slo-stream-dir-unknown-scheme",
    ),
    pytest.param(
        Case(
            set_key("slo", "stream_dir", value="hdfs://user:hunter2@/kafka-pulse"),
            "slo.stream_dir: 'hdfs://***@/kafka-pulse': hdfs:// needs an authority (a host, bucket or container)",
        ),
        id="slo-stream-dir-no-host-and-the-password-not-shown",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_invalid_config_is_refused_naming_the_key(case: Case, files: Path) -> None:
    """`{dir}` in a row's message stands for the config directory."""
    tree = valid_config()
    case.breaks(tree)
    assert refusal_lines(tree, ENVIRON, files) == ["pulse.yaml: " + case.want.replace("{dir}", str(files))]


# --- the file as text -------------------------------------------------------------------------------------------


def refusal(text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(text, "pulse.yaml", environ or {})
    return str(excinfo.value)


def test_yaml_syntax_error_names_line_and_column() -> None:
    text = "clusters:\n  - name: prod\n    bootstrap_servers: [kafka1:9093\n"
    assert refusal(text).startswith("pulse.yaml: line 4, column 1: YAML syntax error: ")


def test_duplicate_yaml_key_is_refused() -> None:
    # PyYAML would keep the second silently; a doubled `password:` is a classic copy-paste accident.
    text = "canary:\n  interval_s: 1\n  interval_s: 5\n"
    assert refusal(text) == (
        "pulse.yaml: line 3, column 3: YAML syntax error: duplicate key 'interval_s' (first at line 2)"
    )


@pytest.mark.parametrize(("text", "kind"), [("- name: prod\n", "a list"), ("just words\n", "a str"), ("42\n", "a int")])
def test_top_level_must_be_a_mapping(text: str, kind: str) -> None:
    assert refusal(text) == (f"pulse.yaml: the top level must be a mapping of sections (clusters: ...), not {kind}")


@pytest.mark.parametrize("text", ["", "{}\n", "clusters: []\n", "# only a comment\n"])
def test_empty_configs_are_valid(text: str) -> None:
    config = parse_config(text, "pulse.yaml", {})
    assert config.clusters == []
    assert config.http.listen == "127.0.0.1:9308"  # loopback by default
    assert config.alerting.enabled is False


SLO_ENTRY = {
    "name": "availability",
    "source": {"type": "events", "path": "sli"},
    "good": "produce_ok",
    "total": "1",
    "objective": 99.9,
}


def test_a_file_with_only_slos_is_accepted() -> None:
    config = parse_config(yaml.safe_dump({"slos": [SLO_ENTRY]}), "pulse.yaml", {})
    [slo] = config.slos
    assert isinstance(slo, SloSpec)
    assert (slo.name, slo.objective, slo.window) == ("availability", Decimal("99.9"), "30d")


def test_slos_are_typed_and_refused_with_the_rest_of_the_file() -> None:
    """`slos:` is validated with the file (one pass, key paths), not first when the SLO engine reads it."""
    broken = {k: v for k, v in SLO_ENTRY.items() if k != "good"} | {"objective": "high", "windo": "30d"}
    openslo = {"apiVersion": "openslo/v1", "kind": "SLO", "metadata": {"name": "x"}}
    tree = {"slos": [SLO_ENTRY, broken, openslo, {"name": "w", "window": {"calendar": "1y"}}], "http": {"listen": "x"}}
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml.safe_dump(tree, sort_keys=False), "pulse.yaml", {})
    lines = str(caught.value).splitlines()
    assert "pulse.yaml: slos[1].good: required key is missing" in lines
    assert "pulse.yaml: slos[1]: unknown key 'windo'; did you mean 'window'?" in lines
    assert any(line.startswith("pulse.yaml: slos[1].objective: Input should be a valid decimal") for line in lines)
    assert any(line.startswith("pulse.yaml: slos[3].window.calendar: Input should be '1w' or '1M'") for line in lines)
    assert any(line.startswith("pulse.yaml: http.listen: ") for line in lines)
    assert not any("slos[0]" in line or "slos[2]" in line for line in lines)  # valid, and OpenSLO kept as written


def test_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"nope\.yaml: config file not found$"):
        load_config(path, {})


def test_all_problems_are_reported_in_one_pass(files: Path) -> None:
    tree = valid_config()
    _cluster(tree)["bootstrap_servers"] = ["kafka1"]
    tree["lag"]["group_allow"] = "["
    tree["surprise"] = 1
    _cluster(tree)["security"]["sasl"]["password"] = "${UNSET_PASSWORD}"
    _cluster(tree)["security"]["protocol"] = "SASL_PLAINTEXT"
    assert refusal_lines(tree, ENVIRON, files) == [
        "pulse.yaml: clusters[0].security.sasl.password: environment variable UNSET_PASSWORD is not set",
        "pulse.yaml: clusters[0].bootstrap_servers[0]: 'kafka1' is not host:port (e.g. kafka1:9092)",
        "pulse.yaml: clusters[0].security.tls: protocol SASL_PLAINTEXT does not use TLS; set protocol to SASL_SSL",
        "pulse.yaml: lag.group_allow: '[' is not a valid regular expression: unterminated character set at position 0",
        "pulse.yaml: (top level): unknown key 'surprise'; known keys: "
        "clusters, collectors, canary, lag, slo, alerting, http, dashboards, sli_sink, slow_brokers, audit, slos",
    ]


def test_relative_tls_paths_are_relative_to_the_config_file(files: Path) -> None:
    path = files / "pulse.yaml"
    path.write_text(yaml.safe_dump(valid_config()))
    tls = load_config(path, ENVIRON).cluster().security.tls
    assert tls is not None and tls.ca_file == files / "ca.pem"


# --- ${VAR} substitution ----------------------------------------------------------------------------------------


def _canary_topic(value: str, environ: dict[str, str]) -> str:
    return parse_config(f"canary: {{topic: '{value}'}}\n", "pulse.yaml", environ).canary.topic


@pytest.mark.parametrize(
    ("value", "environ", "want"),
    [
        pytest.param("${TOPIC}", {"TOPIC": "probe"}, "probe", id="set"),
        pytest.param("pre-${TOPIC}-post", {"TOPIC": "x"}, "pre-x-post", id="inside-a-string"),
        pytest.param("${TOPIC:-fallback}", {}, "fallback", id="default-when-unset"),
        pytest.param("${TOPIC:-fallback}", {"TOPIC": ""}, "fallback", id="default-when-empty"),
        pytest.param("${TOPIC:-fallback}", {"TOPIC": "set"}, "set", id="default-unused"),
        pytest.param("${A}.${B}", {"A": "a", "B": "b"}, "a.b", id="two-references"),
    ],
)
def test_env_substitution(value: str, environ: dict[str, str], want: str) -> None:
    assert _canary_topic(value, environ) == want


def test_escaped_reference_stays_literal() -> None:
    # `$${X}` is a literal `${X}` even when X is set; checked on a free-form value to keep the braces.
    config = parse_config("alerting: {labels: {expr: '$${X} and ${X}'}}\n", "pulse.yaml", {"X": "1"})
    assert config.alerting.labels == {"expr": "${X} and 1"}


def test_env_value_with_yaml_syntax_stays_a_string(files: Path) -> None:
    # Substitution runs on the parsed tree, so this cannot turn into a mapping or add keys.
    environ = {"KAFKA_PASSWORD": "p: {admin: true}\nextra: [1]"}
    sasl = parse(valid_config(), files, environ).cluster().security.sasl
    assert sasl is not None
    assert sasl.password.get_secret_value() == "p: {admin: true}\nextra: [1]"


def test_unterminated_reference_is_refused() -> None:
    assert refusal("canary: {topic: '${TOPIC'}\n") == (
        "pulse.yaml: canary.topic: '${' without a closing '}' (write '$${' for a literal '${')"
    )


def test_substituted_numbers_are_coerced(files: Path) -> None:
    tree = valid_config()
    tree["clusters"][0]["jmx"]["brokers"][0]["port"] = "${JMX_PORT:-9999}"
    broker = parse(tree, files).cluster().jmx
    assert broker is not None and broker.brokers[0].port == 9999


# --- secrets and helpers ----------------------------------------------------------------------------------------


def test_secrets_are_not_in_repr(files: Path) -> None:
    config = parse(valid_config(), files, {"KAFKA_PASSWORD": "hunter2-kafka"})
    assert "hunter2-kafka" not in repr(config)
    assert "hunter2-kafka" not in str(config)
    assert "hunter2-kafka" not in config.model_dump_json()


def test_cluster_by_name_or_the_only_one(files: Path) -> None:
    tree = valid_config()
    config = parse(tree, files)
    assert config.cluster(None).name == "prod"
    assert config.cluster("prod").name == "prod"
    with pytest.raises(ConfigError, match=r"unknown cluster 'staging'; configured clusters: prod"):
        config.cluster("staging")


def test_cluster_needs_a_name_when_there_are_several(files: Path) -> None:
    tree = valid_config()
    second = copy.deepcopy(_cluster(tree))
    second["name"] = "dr"
    tree["clusters"].append(second)
    with pytest.raises(ConfigError, match=r"2 clusters are configured \(prod, dr\); name one"):
        parse(tree, files).cluster(None)
    with pytest.raises(ConfigError, match="no clusters are configured"):
        parse_config("{}", "pulse.yaml", {}).cluster(None)


def test_bootstrap_servers_accept_a_comma_separated_string() -> None:
    cluster = ClusterConfig.model_validate({"name": "c", "bootstrap_servers": " a:1, b:2 ,"})
    assert cluster.bootstrap_servers == ["a:1", "b:2"]


@pytest.mark.parametrize(
    ("text", "want"),
    [("kafka1:9092", ("kafka1", 9092)), ("[::1]:9092", ("::1", 9092)), ("10.0.0.1:1", ("10.0.0.1", 1))],
)
def test_split_host_port(text: str, want: tuple[str, int]) -> None:
    assert split_host_port(text) == want


def test_ipv6_without_brackets_says_how_to_write_it() -> None:
    with pytest.raises(ValueError, match=r"write IPv6 addresses in brackets, e.g. \[::1\]:9092"):
        split_host_port("::1:9092")


def test_config_is_immutable(files: Path) -> None:
    config = parse(valid_config(), files)
    with pytest.raises(ValidationError, match="frozen"):
        config.canary.interval_s = 5


# --- examples ---------------------------------------------------------------------------------------------------


def test_minimal_example_parses() -> None:
    config = load_config(EXAMPLES / "minimal.yaml", {})
    assert config.cluster().bootstrap_servers == ["127.0.0.1:9092"]
    assert config.cluster().security.protocol == "PLAINTEXT"


def test_production_example_parses(files: Path) -> None:
    environ = {
        "KAFKA_PASSWORD": "kafka-secret",
        "JMX_PASSWORD": "jmx-secret",
        "PULSE_HTTP_PASSWORD": "http-secret",
        "KAFKA_CA_FILE": str(files / "ca.pem"),
        "PULSE_HTTP_CERT_FILE": str(files / "client.crt"),
        "PULSE_HTTP_KEY_FILE": str(files / "client.key"),
    }
    config = load_config(EXAMPLES / "production.yaml", environ)
    cluster = config.cluster("prod-eu1")
    assert cluster.security.protocol == "SASL_SSL"
    assert cluster.security.sasl is not None
    assert cluster.security.sasl.mechanism == "SCRAM-SHA-512"
    assert cluster.security.sasl.password.get_secret_value() == "kafka-secret"
    assert cluster.jmx is not None and [b.broker_id for b in cluster.jmx.brokers] == [1, 2, 3]
    assert config.alerting.enabled and config.http.basic_auth is not None
    # The keys an operator sets for production, beyond connections: where state lives and what is alerted.
    assert config.canary.sli_log.dir == Path("/var/lib/kafka-pulse/sli") and config.canary.closest_replica_probe
    assert config.lag.notify.enabled and config.lag.exact_time_lag.enabled
    assert config.alerting.spool_dir == Path("/var/lib/kafka-pulse/spool") and config.slo.pushgateway_url
    for secret in ("kafka-secret", "jmx-secret", "http-secret"):
        assert secret not in repr(config)


def test_production_example_names_each_missing_secret(files: Path) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_config(EXAMPLES / "production.yaml", {"KAFKA_CA_FILE": str(files / "ca.pem")})
    message = str(excinfo.value)
    assert "clusters[0].security.sasl.password: environment variable KAFKA_PASSWORD is not set" in message
    assert "clusters[0].jmx.brokers[2].password: environment variable JMX_PASSWORD is not set" in message
    assert "http.basic_auth.password: environment variable PULSE_HTTP_PASSWORD is not set" in message


def test_slo_only_example_parses() -> None:
    config = load_config(EXAMPLES / "slo-only.yaml", {})
    assert config.clusters == []
    assert [slo.name for slo in config.slos if isinstance(slo, SloSpec)] == ["canary-end-to-end-latency"]
