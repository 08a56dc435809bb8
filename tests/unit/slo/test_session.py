"""A new Spark session's settings (slo/session.py): which masters bind the driver to loopback (its executors reach
it there), and the driver's heap cap (`slo.driver_memory`)."""

from __future__ import annotations

import pytest
import yaml

from pulse.config import parse_config
from pulse.errors import ConfigError
from slo.session import on_loopback, session_settings


@pytest.mark.parametrize(
    "master",
    ["local[*]", "local[2]", "local", "spark://127.0.0.1:7077", "spark://localhost:7077", "spark://[::1]:7077"],
)
def test_local_and_loopback_masters_bind_the_driver_to_loopback(master: str) -> None:
    assert on_loopback(master)


@pytest.mark.parametrize(
    "master",
    ["yarn", "k8s://https://10.0.0.1:6443", "spark://spark-master:7077", "spark://10.1.2.3:7077", "spark://[::1"],
)
def test_other_masters_keep_spark_s_own_driver_address(master: str) -> None:
    assert not on_loopback(master)


def test_driver_memory_caps_the_heap_and_substitution_stays_off() -> None:
    settings = session_settings("local[*]", {"spark.sql.variable.substitute": "true"}, driver_memory="512m")
    assert settings["spark.driver.memory"] == "512m"
    assert "-XX:+UseSerialGC" in settings["spark.driver.extraJavaOptions"]
    assert settings["spark.sql.variable.substitute"] == "false"
    assert "spark.driver.memory" not in session_settings("local[*]")


@pytest.mark.parametrize("memory", ["512", "0m", "1.5g", "512mb", "-1g", "256m"])
def test_a_driver_memory_that_spark_cannot_read_is_refused_with_its_key(memory: str) -> None:
    with pytest.raises(ConfigError, match=r"slo\.driver_memory"):
        parse_config(yaml.safe_dump({"slo": {"driver_memory": memory}}), "pulse.yaml", {})
