"""The status page in a real browser: Debian's headless Chromium, driven by selenium through Debian's chromedriver
(nothing downloads a browser), on `kafka-pulse run` behind basic auth over TLS against a 3-node cluster of its own.
Healthy first, then a broker killed (the page names it), then a group that stops committing (its row turns ERR
with the rule that fired). Each state is saved as a PNG in docs/screenshots/, and the browser console stays clean.

One process and one browser serve the module; the tests run in order and share them.
"""

from __future__ import annotations

import base64
import dataclasses
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import TopicPartition
from selenium import webdriver
from selenium.webdriver.common.by import By

from devstack.cluster import DevCluster
from devstack.tls import create_pem_files
from devstack.topology import FAST_FENCING, Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, commit_offsets
from tests.fixtures.logs import register_log
from tests.fixtures.pulse_process import PulseProcesses
from tests.integration.app.status_support import (
    PAGE_DEADLINE_S,
    Page,
    await_dom,
    broker_row,
    chromium,
    commit_until_listed,
    console_problems,
    screenshot,
    seed_sli_log,
    text,
    up_row,
)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
USER, PASSWORD = "sre", "status-" + "page-login-7"


@pytest.fixture(scope="module")
def status_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 3-node cluster of the module's own (a broker is killed here), fencing a dead broker after 4 s."""
    home: Path = tmp_path_factory.mktemp("kafka-status-page")
    planned = DevCluster.plan(home, 3, KAFKA_VERSION, Security.PLAINTEXT)
    cluster = DevCluster(home, dataclasses.replace(planned.spec, broker_overrides=FAST_FENCING))
    for node in cluster.spec.nodes:
        register_log(f"kafka-status-page node {node.node_id}", cluster.log_path(node.node_id))
    started = time.monotonic()
    try:
        cluster.up(cache_dir())
        yield KafkaHandle(cluster, time.monotonic() - started)
    finally:
        cluster.down(keep_data=True)


@pytest.fixture(scope="module")
def page(
    status_kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Page]:
    home = tmp_path_factory.mktemp("status-run")
    pem = create_pem_files(home / "tls")
    cluster = dev_cluster_config(status_kafka.cluster).model_dump(mode="json")
    sli = home / "canary-sli"  # apart from <state>/sli/lag, which a Spark read of the same tree would meet
    seed_sli_log(sli, cluster["name"])
    config = {
        "clusters": [cluster],
        "collectors": {"enabled": False},
        "canary": {
            "topic": f"pulse-status-{uuid.uuid4().hex[:8]}",
            "interval_s": 0.5,
            "availability_window_s": 8.0,
            "latency_slo_s": 2.0,
            "connection_check_timeout_s": 5.0,
            "sli_log": {"dir": str(sli), "flush_interval_s": 5},
        },
        "lag": {"offset_refresh_s": 1, "intervals": 3},
        "slo": {"schedule_s": 15, "spark_master": "local[1]"},
        "slos": [
            {
                "name": "produce-availability",
                "labels": {"cluster": cluster["name"]},
                "source": {"type": "events", "path": str(sli)},
                "good": "produce_ok",
                "total": "NOT duplicate",
                "objective": 99.9,
            }
        ],
        "dashboards": {"grafana_url": "http://127.0.0.1:3000"},
        "http": {
            "basic_auth": {"username": USER, "password": "${PULSE_TEST_STATUS_PASSWORD}"},
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
        },
    }
    env = {"PULSE_TEST_STATUS_PASSWORD": PASSWORD}
    run = pulse_process.start(
        "run", config, home=home, env=env, auth=(USER, PASSWORD), ca_file=pem.ca_file, name="kafka-pulse run (status)"
    )
    driver: webdriver.Chrome | None = None
    try:
        driver = chromium()
        # The login a user types at the browser's prompt, sent with every request of the page (its fetches too).
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}})
        url = run.url + "/"
        driver.get(url)
        yield Page(driver, url, status_kafka, run, cluster["name"])
    finally:
        if driver is not None:
            driver.quit()
        run.stop()


def test_healthy_cluster_shows_ok_with_every_broker_up(page: Page) -> None:
    verdict = await_dom(page, lambda: text(page, "#verdict") == "OK" or None, "the verdict OK")
    assert verdict
    for broker in (1, 2, 3):
        row = await_dom(page, up_row(page, broker), f"broker {broker} up")
        assert f"az-{'abc'[broker - 1]}" in row.text
    # the canary's figures per broker arrive with its first rounds
    await_dom(page, lambda: "%" in broker_row(page, 1).find_elements(By.TAG_NAME, "td")[4].text or None, "availability")
    assert "Kafka cluster overview" in text(page, "#links") and "Burrow API" in text(page, "#links")
    links = {a.text: a.get_attribute("href") for a in page.driver.find_elements(By.CSS_SELECTOR, "#links a")}
    assert links["Kafka cluster overview"] == "http://127.0.0.1:3000/d/kafka-pulse-cluster"
    # an OK group keeps up with the topic it reads
    kafka = page.kafka
    topic = kafka.create_topic("status-orders")
    producer = kafka.producer()
    for i in range(300):
        producer.produce(topic, value=b"x" * 100, partition=i % 3)
    assert producer.flush(30) == 0
    ok = kafka.consumer("keeps-up")
    try:
        row = commit_until_listed(page, ok, "keeps-up", [TopicPartition(topic, p, 100) for p in range(3)])
    finally:
        ok.close()
    assert "OK" in row.text
    chart = "#slos svg.burndown circle.point"  # a point per evaluation: Spark's first one takes a while
    await_dom(page, lambda: page.driver.find_elements(By.CSS_SELECTOR, chart) or None, "an SLO chart", 300)
    screenshot(page, "status-healthy")
    assert console_problems(page) == []
    # the check's `self` section is read in-process: `run` does not scrape itself through its own login and TLS
    answer = httpx.get(page.url + "api/status", auth=(USER, PASSWORD), verify=False, timeout=10).json()
    [own] = [s for s in answer["clusters"][0]["checks"] if s["name"] == "self"]
    assert own["status"] == "OK", own


def test_killed_broker_is_named_within_seconds(page: Page) -> None:
    cluster = page.kafka.cluster
    victim = 3  # a voter like every dev node; the quorum keeps a majority with 1 and 2
    killed = time.monotonic()
    cluster.kill(victim)
    try:
        row = await_dom(page, lambda: broker_row(page, victim) if "DOWN" in broker_row(page, victim).text else None,
                        f"broker {victim} DOWN")  # fmt: skip
        named_after_s = time.monotonic() - killed
        assert f"broker {victim}" in row.text  # the check's reason names it
        verdict = await_dom(page, lambda: text(page, "#verdict") if text(page, "#verdict") == "CRIT" else None, "CRIT")
        assert verdict == "CRIT"
        checks = text(page, "#checks")
        assert f"down: broker {victim}" in checks
        # its partitions list it as the broker to blame once the controller shrank their ISRs
        await_dom(page, lambda: f"broker {victim}" in text(page, "#partitions") or None, f"partitions blaming {victim}")
        print(f"status page named broker {victim} {named_after_s:.1f} s after kill -9")
        screenshot(page, "status-broker-down")
    finally:
        cluster.restart(victim, cache_dir())
    await_dom(page, up_row(page, victim), f"broker {victim} up again")
    assert console_problems(page) == []


def test_lagging_group_turns_err_with_the_rule(page: Page) -> None:
    kafka = page.kafka
    topic = kafka.create_topic("status-payments")
    producer = kafka.producer()
    for i in range(600):
        producer.produce(topic, value=b"y" * 100, partition=i % 3)
    assert producer.flush(30) == 0
    slow = kafka.consumer("falls-behind")
    try:
        # far behind the log end: listed first, then two more commits a second apart, then none. The window fills,
        # the lag never reaches zero and the commits stop, which the rules call STOP (ERR for the group)
        commit_until_listed(page, slow, "falls-behind", [TopicPartition(topic, p, 10) for p in range(3)])
        for offset in (20, 30):
            time.sleep(1.0)  # not a wait for a condition: the commits' spacing in time is the input under test
            commit_offsets(slow, [TopicPartition(topic, p, offset) for p in range(3)])
    finally:
        slow.close()

    def in_err() -> Any:
        row = page.driver.find_element(By.CSS_SELECTOR, '#groups tr[data-group="falls-behind"]')
        return row if "row-ERR" in (row.get_attribute("class") or "") else None

    row = await_dom(page, in_err, "falls-behind in ERR")
    # the rule that fired names the partition and its values: STALL (the first commits repeated offset 10 while the
    # page had not listed the group yet) or STOP (no commit since), both ERR for the group
    reason = row.find_element(By.CSS_SELECTOR, "td.reason").text
    worst = row.find_elements(By.TAG_NAME, "td")[3].text
    assert worst in ("STALL", "STOP") and f"{topic}[" in reason and f"{worst}: " in reason, row.text
    # filtering keeps only the matching rows; a click shows the group's partitions from the Burrow route
    box = page.driver.find_element(By.ID, "group-filter")
    box.send_keys("falls")
    rows = "#groups tbody tr[data-group]"
    await_dom(page, lambda: len(page.driver.find_elements(By.CSS_SELECTOR, rows)) == 1 or None, "the filtered table")
    page.driver.find_element(By.CSS_SELECTOR, '#groups tr[data-group="falls-behind"]').click()
    detail = "#group-partitions tbody tr[data-partition]"
    parts = await_dom(page, lambda: page.driver.find_elements(By.CSS_SELECTOR, detail) or None, "its partitions")
    assert len(parts) == 3 and all(topic in p.text for p in parts)
    # the partitions (Burrow's /lag route, re-read at every poll) agree with the group's row
    err = "#group-partitions tbody tr.row-ERR"
    await_dom(page, lambda: len(page.driver.find_elements(By.CSS_SELECTOR, err)) == 3 or None, "3 partitions in error")
    screenshot(page, "status-lagging-group", "#groups-section")
    # sorting: the largest lag first, then reversed by a second click
    box.clear()
    box.send_keys(" ")  # an input event; blank filters nothing
    await_dom(page, lambda: len(page.driver.find_elements(By.CSS_SELECTOR, rows)) >= 3 or None, "every group again")
    header = page.driver.find_element(By.CSS_SELECTOR, '#groups th[data-key="totallag"]')

    def order() -> list[str]:
        return [r.get_attribute("data-group") or "" for r in page.driver.find_elements(By.CSS_SELECTOR, rows)]

    header.click()
    assert order()[0] == "falls-behind", order()
    header.click()
    assert order()[-1] == "falls-behind", order()
    assert console_problems(page) == []


def test_lag_serves_the_page_without_canary_or_slos(
    status_kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    """`kafka-pulse lag` carries the page too: the check's verdict and the groups, the canary and SLO parts null
    with the reason, and the Burrow API linked."""
    config = {
        "clusters": [dev_cluster_config(status_kafka.cluster).model_dump(mode="json")],
        "lag": {"offset_refresh_s": 1},
    }
    lag = pulse_process.start("lag", config, home=tmp_path, name="kafka-pulse lag (status page)")
    try:
        base = lag.url
        topic = status_kafka.create_topic("status-lag-cmd")
        consumer = status_kafka.consumer("lag-cmd")
        try:

            def committed_and_listed() -> dict[str, Any]:
                commit_offsets(consumer, [TopicPartition(topic, 0, 0)])  # until a HWM round has seen the topic
                answer: dict[str, Any] = httpx.get(base + "/api/status", timeout=10).json()
                return answer

            doc = poll(
                committed_and_listed,
                lambda d: d["checked_at"] is not None and "lag-cmd" in [g["group"] for g in d["groups"]],
                PAGE_DEADLINE_S,
                "a checked document listing the group lag-cmd",
                interval_s=1.0,
            )
        finally:
            consumer.close()
        assert doc["status"] in ("OK", "WARN", "CRIT") and [c["cluster"] for c in doc["clusters"]] == ["dev"]
        assert (doc["slos"], doc["azs"]) == (None, [])
        assert doc["off"] == {"canary": "not run by `kafka-pulse lag`", "slo": "not run by `kafka-pulse lag`"}
        assert doc["links"]["burrow_api"] == "/v3/kafka"
        assert all(b["canary"] is None for b in doc["brokers"]) and len(doc["brokers"]) == 3
        page = httpx.get(base + "/", timeout=10)
        assert page.status_code == 200 and "/static/status.js" in page.text
        assert f"status page on {base}/" in lag.log()
    finally:
        assert lag.stop() == 0, lag.log()[-3000:]
