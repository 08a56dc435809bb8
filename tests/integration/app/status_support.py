"""What test_status_page.py drives the page with: Debian's Chromium through Debian's chromedriver, DOM probes
polled with a deadline, screenshots (into docs/screenshots/ when asked), the console read back, and the seed of the
SLO's canary log."""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pyarrow.parquet as pq
from confluent_kafka import Consumer, TopicPartition
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By

from canary.events import ProbeResult
from canary.sli_log import date_of, table_of
from pulse.ports import wait_until
from tests.fixtures import browser
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import PulseProcess

SHOTS = Path(os.environ.get("KAFKA_PULSE_SCREENSHOTS") or Path(tempfile.gettempdir()) / "kafka-pulse-screenshots")
"""Where screenshots go: a temporary directory, so a test run leaves the work tree as it was;
KAFKA_PULSE_SCREENSHOTS=docs/screenshots refreshes the docs' (docs/testing.md, "Screenshots")."""
PAGE_DEADLINE_S = 120.0
"""How long the DOM may take to show a state: the check refreshes every 5 s, but a kill -9 on a loaded 2-core
machine takes the controller a while to fence, and the first start of Spark is slow."""
T = TypeVar("T")


@dataclass
class Page:
    driver: webdriver.Chrome
    url: str
    kafka: KafkaHandle
    run: PulseProcess
    cluster: str

    def log(self) -> str:
        return self.run.log()[-4000:]


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
    """Debian's Chromium (tests/fixtures/browser.py), trusting the listener's certificate (the test's own CA's)."""
    return browser.chromium(accept_insecure_certs=True)


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
        body = page.driver.find_element(By.TAG_NAME, "body").text[:3000]
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
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def console_problems(page: Page) -> list[dict[str, Any]]:
    """Browser console entries worse than INFO (failed loads, script errors, policy violations)."""
    entries: list[dict[str, Any]] = page.driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [e for e in entries if e.get("level") in ("WARNING", "SEVERE")]
