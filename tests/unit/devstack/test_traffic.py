"""The demo traffic's plan and the quota command it runs (pure parts; tests/integration/app/test_demo.py runs it)."""

from pathlib import Path

from devstack.runtime import KafkaRuntime, config_command_main
from devstack.traffic import TOO_SLOW, TrafficPlan, quota_command


def test_the_slow_group_is_throttled_below_what_the_producer_writes() -> None:
    plan = TrafficPlan()
    written = plan.records_per_s * plan.record_size  # bytes/s, before batch overhead
    assert 3 * plan.slow_bytes_per_s_per_broker < written / 2  # 3 brokers' quotas: well under half
    assert plan.stops_after_records == plan.records_per_s * plan.stops_after_s == 2000


def test_the_quota_goes_through_kafkas_config_command_for_the_slow_client_id() -> None:
    argv = quota_command(KafkaRuntime("4.3.1", Path("/cache/libs")), "127.0.0.1:9092", TOO_SLOW, 1024)
    assert argv[argv.index("-cp") + 1] == "/cache/libs/*"
    assert argv[argv.index("-cp") + 2 :] == [
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        "127.0.0.1:9092",
        "--alter",
        "--add-config",
        "consumer_byte_rate=1024",
        "--entity-type",
        "clients",
        "--entity-name",
        "demo-too-slow",
    ]


def test_from_kafka_4_4_the_quota_goes_through_config_command_in_kafka_tools() -> None:
    argv = quota_command(KafkaRuntime("4.4.0", Path("/cache/tools")), "127.0.0.1:9092", TOO_SLOW, 1024)
    at = argv.index("-cp")
    assert argv[at + 1 : at + 3] == ["/cache/tools/*", "org.apache.kafka.tools.ConfigCommand"]
    assert config_command_main("3.9.2") == config_command_main("4.3.1") == "kafka.admin.ConfigCommand"
    assert config_command_main("4.10.0") == "org.apache.kafka.tools.ConfigCommand"
