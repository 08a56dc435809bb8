"""`kafka-pulse run` as a real process on the session's 3-node cluster: one
/metrics carrying the collectors', the canary's and lag's families, the Burrow v3 API beside it, both behind
`http.basic_auth` over `http.tls`, and a clean exit 0 on SIGTERM with nothing left running. What every listener
shares (login, formats, bad and idle clients) is tested on `run`'s too, in test_listeners.py.

One process serves the module: the tests read it in order and the last one stops it.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from devstack.tls import create_pem_files
from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import PollTimeout, poll
from pulse.ports import is_listening
from pulse.process import pid_alive
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.pulse_process import PulseProcess, PulseProcesses

pytestmark = pytest.mark.integration

USER = "prometheus"
PASSWORD = "run-" + "behind-a-login-42"
FAMILIES = {
    "collectors (Admin API)": "kafka_pulse_cluster_state_up{",
    "collectors (JMX)": "kafka_server_replicamanager_leadercount{",
    "canary": "kafka_pulse_canary_records_consumed_total{",
    "lag": "kafka_pulse_lag_source_up{",
}
SLOW_FAMILIES = ("kafka_pulse_broker_slow", "kafka_pulse_broker_slow_score")


def children_of(pid: int) -> set[int]:
    """Every process whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


@pytest.fixture(scope="module")
def running(
    kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PulseProcess]:
    home = tmp_path_factory.mktemp("run")
    pem = create_pem_files(home / "tls")
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["jmx"]["timeout_s"] = 30  # a first JMX connect on a busy 2-core machine can take seconds
    config = {
        "clusters": [cluster],
        "collectors": {"scrape_interval_s": 2},
        "canary": {"topic": f"pulse-run-{uuid.uuid4().hex[:8]}", "interval_s": 0.5},
        "lag": {"offset_refresh_s": 2},
        "http": {
            "basic_auth": {"username": USER, "password": "${PULSE_TEST_RUN_PASSWORD}"},
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
        },
    }
    env = {"PULSE_TEST_RUN_PASSWORD": PASSWORD}
    with pulse_process.start("run", config, home=home, env=env, auth=(USER, PASSWORD), ca_file=pem.ca_file) as run:
        yield run


def cluster_of(running: PulseProcess) -> str:
    return str(running.config["clusters"][0]["name"])


def test_lag_api_serves_the_cluster_with_the_login(running: PulseProcess) -> None:
    answer = running.client.get(running.url + "/v3/kafka")
    assert answer.status_code == 200
    assert answer.json()["clusters"] == [cluster_of(running)]
    consumers = running.client.get(running.url + f"/v3/kafka/{cluster_of(running)}/consumer")
    assert consumers.status_code == 200 and consumers.json()["error"] is False


def test_one_metrics_endpoint_serves_all_three_components(running: PulseProcess) -> None:
    def families_present(response: httpx.Response) -> set[str]:
        return {name for name, marker in FAMILIES.items() if marker in response.text}

    poll(
        lambda: running.client.get(running.url + "/metrics"),
        lambda r: r.status_code == 200 and families_present(r) == set(FAMILIES),
        120,
        f"all of {sorted(FAMILIES)} on /metrics",
    )
    log = running.log()
    assert f"metrics {running.url}/metrics (basic auth)" in log
    assert f"lag API {running.url}/v3/kafka (basic auth)" in log
    assert PASSWORD not in log
    assert PASSWORD not in Path(f"/proc/{running.popen.pid}/cmdline").read_bytes().decode(errors="replace")


def test_every_component_reports_a_fresh_last_success_on_metrics(running: PulseProcess) -> None:
    """Self-health (kafka_pulse/self_health.py) reads each component's own state: on a healthy cluster every one has
    succeeded recently and none is stale."""
    from kafka_pulse.self_health import parse_self_health

    seen: list[str] = []

    def fresh(response: httpx.Response) -> bool:
        components = {c.component: c for c in parse_self_health(response.text)}
        now = time.time()
        seen[:] = [f"{c.component}: {c.last_success_s} at {now}" for c in components.values()]
        return components.keys() == {"collectors", "canary", "lag_reader"} and all(
            c.last_success_s is not None and not c.is_stale(now) for c in components.values()
        )

    try:
        poll(
            lambda: running.client.get(running.url + "/metrics"),
            fresh,
            120,
            "a fresh last success for collectors, canary and lag_reader",
        )
    except PollTimeout as exc:
        raise AssertionError(seen) from exc


def test_slow_broker_detection_is_on_by_default_with_jmx(kafka: KafkaHandle, running: PulseProcess) -> None:
    """The config has JMX endpoints and no `slow_brokers:` section: the detector runs anyway (on by default) and,
    on the healthy cluster, gives every broker a verdict of 0 and a score."""
    brokers = {str(node.node_id) for node in kafka.cluster.spec.nodes}
    seen: dict[str, dict[str, float]] = {}

    def verdicts(response: httpx.Response) -> bool:
        seen.clear()
        for family in text_string_to_metric_families(response.text):
            for s in family.samples:
                if s.name in SLOW_FAMILIES and s.labels.get("cluster") == cluster_of(running):
                    seen.setdefault(s.name, {})[s.labels["broker"]] = s.value
        return all(set(seen.get(name, {})) == brokers for name in SLOW_FAMILIES)

    try:
        poll(
            lambda: running.client.get(running.url + "/metrics"),
            lambda r: r.status_code == 200 and verdicts(r),
            120,
            f"kafka_pulse_broker_slow and _score for brokers {sorted(brokers)}",
        )
    except PollTimeout as exc:
        raise AssertionError(seen) from exc
    assert seen["kafka_pulse_broker_slow"] == dict.fromkeys(brokers, 0.0), seen
    assert all(score >= 0 for score in seen["kafka_pulse_broker_slow_score"].values()), seen
    assert "slow-broker detection every 15 s" in running.log()  # the default interval, from no config at all


def test_sigterm_stops_everything_and_exits_0(running: PulseProcess) -> None:
    """Last in the module: SIGTERM, exit 0, every child process gone, the listener closed."""
    children = children_of(running.popen.pid)
    running.popen.send_signal(signal.SIGTERM)
    assert running.popen.wait(timeout=60) == 0, running.log()[-3000:]
    assert not [pid for pid in children if pid_alive(pid)]
    port = int(running.url.rsplit(":", 1)[1])
    assert not is_listening(port)
    log = running.log()
    assert "kafka-pulse run: stopped" in log
    assert "Traceback" not in log
