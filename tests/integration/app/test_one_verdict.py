"""One verdict: `run`'s status page, `kafka-pulse check --lag-url <run's listener>` and the Burrow status route
agree that a consumer group which committed and then stopped while records keep arriving is CRIT (issue 23, 6).

Before, the page's overall status and the check's lag section came from one snapshot that never judges a group,
so the header said OK while the evaluator below it said ERR."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import REPO, PulseProcess, PulseProcesses
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration

USER = "prometheus"
PASSWORD = "verdict-" + "behind-a-login-7"
GROUP = f"verdict-stopped-{uuid.uuid4().hex[:6]}"
CHECK_BOUND_S = 30.0
"""The outer bound on one `check` process (its own deadline is the default 5 s)."""


@pytest.fixture(scope="module")
def running(
    kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PulseProcess]:
    home = tmp_path_factory.mktemp("verdict")
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["jmx"] = None
    config = {
        "clusters": [cluster],
        "collectors": {"enabled": False},
        "canary": {"topic": f"pulse-verdict-{uuid.uuid4().hex[:8]}", "interval_s": 0.5},
        "lag": {"offset_refresh_s": 1, "intervals": 3, "group_allow": "^verdict-"},
        "http": {"basic_auth": {"username": USER, "password": "${PULSE_TEST_VERDICT_PASSWORD}"}},
    }
    env = {"PULSE_TEST_VERDICT_PASSWORD": PASSWORD}
    with pulse_process.start("run", config, home=home, env=env, auth=(USER, PASSWORD)) as run:
        yield run


def check_json(run: PulseProcess) -> tuple[int, dict[str, Any]]:
    """`kafka-pulse check --json --lag-url <run's listener>` as a fresh process, with the run's config (its login)."""
    env = {**os.environ, "KAFKA_PULSE_HOME": str(run.home), "PYTHONPATH": str(REPO),
           "PULSE_TEST_VERDICT_PASSWORD": PASSWORD}  # fmt: skip
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json", "--config", str(run.config_path)]
    done = subprocess.run(
        [*argv, "--lag-url", run.url], cwd=REPO, env=env, capture_output=True, text=True, timeout=CHECK_BOUND_S
    )
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def lag_section(doc: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in doc["checks"] if c["name"] == "lag")


def test_a_stopped_group_is_crit_on_the_page_in_check_and_on_the_burrow_route(
    kafka: KafkaHandle, running: PulseProcess
) -> None:
    cluster = str(running.config["clusters"][0]["name"])
    topic = kafka.create_topic(f"verdict-{uuid.uuid4().hex[:6]}", partitions=1)
    consumer = kafka.consumer(GROUP)
    try:
        for offset in (5, 10):  # two commits, then the consumer stops while producers go on
            produce(kafka, topic, 20, f"a{offset}")
            commit_offsets(consumer, [TopicPartition(topic, 0, offset)])
            time.sleep(1.0)  # the group's commit cadence
    finally:
        consumer.close()
    route = f"{running.url}/v3/kafka/{cluster}/consumer/{GROUP}/status"

    def burrow_status() -> dict[str, Any]:
        body: dict[str, Any] = running.client.get(route).json()
        if body.get("status", {}).get("status") != "ERR":
            produce(kafka, topic, 5, "more")  # records keep arriving until the evaluator judges the group
        return body

    burrow = poll(burrow_status, lambda b: b["status"]["status"] == "ERR", 90, f"{GROUP} ERR on {route}", 1.0)

    def page() -> dict[str, Any]:
        doc: dict[str, Any] = running.client.get(f"{running.url}/api/status").json()
        return doc

    doc = poll(page, lambda d: d["status"] == "CRIT", 60, "/api/status overall CRIT", 1.0)
    page_lag = lag_section(doc["clusters"][0])
    assert page_lag["status"] == "CRIT", page_lag
    assert [g["group"] for g in page_lag["details"]["groups"]] == [GROUP]
    assert page_lag["details"]["source"] == "lag verdicts from this process's evaluator (running evaluator)"

    code, report = check_json(running)
    lag = lag_section(report)
    assert (code, report["status"], lag["status"]) == (2, "CRIT", "CRIT"), report
    assert lag["details"]["source"] == f"lag verdicts from {running.url} (running evaluator)"
    named = {g["group"]: g for g in lag["details"]["groups"]}
    assert named[GROUP]["lag_status"] == burrow["status"]["status"] == "ERR"
    assert any(GROUP in r for r in lag["reasons"])


def test_a_listener_that_does_not_answer_leaves_lag_unknown(running: PulseProcess) -> None:
    """`--lag-url` at a port nothing listens on: the lag section says so and is UNKNOWN, never OK."""
    from pulse.ports import free_ports

    dead = f"http://127.0.0.1:{free_ports(1)[0]}"
    env = {**os.environ, "KAFKA_PULSE_HOME": str(running.home), "PYTHONPATH": str(REPO),
           "PULSE_TEST_VERDICT_PASSWORD": PASSWORD}  # fmt: skip
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json", "--config", str(running.config_path)]
    done = subprocess.run(
        [*argv, "--lag-url", dead], cwd=REPO, env=env, capture_output=True, text=True, timeout=CHECK_BOUND_S
    )
    lag = lag_section(json.loads(done.stdout))
    assert lag["status"] == "UNKNOWN"
    assert lag["reasons"][0] == f"lag verdicts from {dead} (running evaluator)"
    assert "no answer from" in lag["reasons"][1]
