"""The status page in a real browser: Debian's headless Chromium, driven by selenium through Debian's chromedriver
(nothing downloads a browser), on `kafka-pulse run` behind basic auth over TLS against a 3-node cluster of its own.
Healthy first, then a broker killed (the page names it), then a group that stops committing (its row turns ERR
with the rule that fired). Each state is saved as a PNG in docs/screenshots/, and the browser console stays clean.

One process and one browser serve the module; the tests run in order and share them.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pyarrow.parquet as pq
import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from canary.events import ProbeResult
from canary.sli_log import date_of, table_of
from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.services import poll
from devstack.tls import create_pem_files
from devstack.topology import FAST_FENCING, Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.paths import cache_dir
from pulse.ports import free_ports, is_listening, wait_until
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "docs" / "screenshots"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
USER, PASSWORD = "sre", "status-" + "page-login-7"
PAGE_DEADLINE_S = 120.0
"""How long the DOM may take to show a state: the check refreshes every 5 s, but a kill -9 on a loaded 2-core
machine takes the controller a while to fence, and the first start of Spark is slow."""
T = TypeVar("T")


@dataclass
class Page:
    driver: webdriver.Chrome
    url: str
    kafka: KafkaHandle
    proc: subprocess.Popen[bytes]
    log_path: Path
    cluster: str

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def status_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 3-node cluster of the module's own (a broker is killed here), fencing a dead broker after 4 s."""
    home: Path = tmp_path_factory.mktemp("kafka-status-page")
    planned = DevCluster.plan(home, 3, DEFAULT_VERSION, Security.PLAINTEXT)
    cluster = DevCluster(home, dataclasses.replace(planned.spec, broker_overrides=FAST_FENCING))
    for node in cluster.spec.nodes:
        register_log(f"kafka-status-page node {node.node_id}", cluster.log_path(node.node_id))
    started = time.monotonic()
    try:
        cluster.up(cache_dir())
        yield KafkaHandle(cluster, time.monotonic() - started)
    finally:
        cluster.down(keep_data=True)


def seed_sli_log(directory: Path, cluster: str) -> None:
    """An hour of good probes, one a minute, as an earlier canary run would have left them: an SLO source must hold
    files when the spec is loaded, and the live canary of the test adds its rows beside them."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    rows = [
        ProbeResult(
            now - timedelta(minutes=m), cluster, "seed", 0, 1, "az-a", None, "seed", m, True, 0.002, True, 0.003
        )
        for m in range(60, 0, -1)
    ]
    for day in sorted({date_of(r) for r in rows}):
        folder = directory / f"date={day}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table_of([(r, None) for r in rows if date_of(r) == day]), folder / "part-seed.parquet")


def chromium() -> webdriver.Chrome:
    """Debian's Chromium through Debian's chromedriver: with an explicit driver path selenium-manager never runs."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1700",
    ):
        options.add_argument(flag)
    options.accept_insecure_certs = True  # the listener's certificate is the test's own CA's
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


@pytest.fixture(scope="module")
def page(status_kafka: KafkaHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    home = tmp_path_factory.mktemp("status-run")
    pem = create_pem_files(home / "tls")
    (port,) = free_ports(1)
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
            "listen": f"127.0.0.1:{port}",
            "basic_auth": {"username": USER, "password": "${PULSE_TEST_STATUS_PASSWORD}"},
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
        },
    }
    path = home / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    log_path = home / "run.log"
    register_log("kafka-pulse run (status page)", log_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(home), "PULSE_TEST_STATUS_PASSWORD": PASSWORD}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    driver: webdriver.Chrome | None = None
    try:
        assert wait_until(lambda: proc.poll() is not None or is_listening(port), 120), "run never listened"
        assert proc.poll() is None, log_path.read_text()[-3000:]
        driver = chromium()
        # The login a user types at the browser's prompt, sent with every request of the page (its fetches too).
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}})
        url = f"https://127.0.0.1:{port}/"
        driver.get(url)
        SHOTS.mkdir(parents=True, exist_ok=True)
        yield Page(driver, url, status_kafka, proc, log_path, cluster["name"])
    finally:
        if driver is not None:
            driver.quit()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def await_dom(page: Page, probe: Callable[[], T | None], what: str, deadline_s: float = PAGE_DEADLINE_S) -> T:
    """Poll the page until `probe` gives a value (elements re-rendered under it count as not yet)."""
    found: list[T] = []

    def attempt() -> bool:
        try:
            value = probe()
        except (StaleElementReferenceException, WebDriverException):
            return False
        if value is None:
            return False
        found.append(value)
        return True

    if not wait_until(attempt, deadline_s, interval_s=0.5):
        shot = SHOTS.parent / f"failed-{uuid.uuid4().hex[:6]}.png"
        page.driver.save_screenshot(str(shot))
        body = page.driver.find_element(By.TAG_NAME, "body").text[:3000]
        shot.unlink()
        raise AssertionError(
            f"the page never showed {what} in {deadline_s:g} s:\n{body}\n--- run log ---\n{page.log()}"
        )
    return found[-1]


def text(page: Page, selector: str) -> str:
    return str(page.driver.find_element(By.CSS_SELECTOR, selector).text)


def broker_row(page: Page, broker: int) -> Any:
    return page.driver.find_element(By.CSS_SELECTOR, f'#brokers tbody tr[data-broker="{broker}"]')


def group_row(page: Page, group: str) -> Any:
    return page.driver.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{group}"]')


def commit_until_listed(page: Page, consumer: Consumer, group: str, offsets: list[TopicPartition]) -> Any:
    """Commit `offsets` every second, as a running consumer would, until the page lists the group: lag drops
    commits for a topic it has not seen in a high-watermark round yet (Burrow's storage does the same), so the first
    commit to a new topic may not count."""
    rows: list[Any] = []

    def listed() -> bool:
        commit_offsets(consumer, offsets)
        try:
            rows.append(group_row(page, group))
        except WebDriverException:
            return False
        return True

    assert wait_until(listed, PAGE_DEADLINE_S, interval_s=1.0), f"the page never listed {group}:\n{page.log()}"
    return rows[-1]


def up_row(page: Page, broker: int) -> Callable[[], Any]:
    """A probe for the DOM: the broker's row once it reads `up`."""

    def probe() -> Any:
        row = broker_row(page, broker)
        return row if "up" in row.text.split() else None

    return probe


def screenshot(page: Page, name: str, top: str = "body") -> Path:
    """The viewport from `top` down, at 3/4 scale: readable, and a PNG of about 150 KB for the repository."""
    page.driver.execute_script("arguments[0].scrollIntoView(true)", page.driver.find_element(By.CSS_SELECTOR, top))
    width, height, scroll = page.driver.execute_script("return [window.innerWidth, window.innerHeight, window.scrollY]")
    clip = {"x": 0, "y": scroll, "width": width, "height": height, "scale": 0.75}
    shot = page.driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": clip})
    path = SHOTS / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def console_problems(page: Page) -> list[dict[str, Any]]:
    """Browser console entries worse than INFO (failed loads, script errors, policy violations)."""
    entries: list[dict[str, Any]] = page.driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [e for e in entries if e.get("level") in ("WARNING", "SEVERE")]


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


def test_lag_serves_the_page_without_canary_or_slos(status_kafka: KafkaHandle, tmp_path: Path) -> None:
    """`kafka-pulse lag` carries the page too: the check's verdict and the groups, the canary and SLO parts null
    with the reason, and the Burrow API linked."""
    (port,) = free_ports(1)
    config = {
        "clusters": [dev_cluster_config(status_kafka.cluster).model_dump(mode="json")],
        "lag": {"offset_refresh_s": 1},
        "http": {"listen": f"127.0.0.1:{port}"},
    }
    path = tmp_path / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    log_path = tmp_path / "lag.log"
    register_log("kafka-pulse lag (status page)", log_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(tmp_path)}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "lag", "--config", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:
        assert wait_until(lambda: proc.poll() is not None or is_listening(port), 120), "lag never listened"
        base = f"http://127.0.0.1:{port}"
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
        assert f"status page on {base}/" in log_path.read_text()
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0, log_path.read_text()[-3000:]
