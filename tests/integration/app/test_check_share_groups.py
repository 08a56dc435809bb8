"""A share group's verdict on every surface, from a real share consumer on the 4.x dev cluster (4.4.0 by default) (#24
point 1): a group whose records wait behind an unmoved start offset is STALLED on the route of a real `kafka-pulse lag`,
CRIT in its status page's `lag` section, listed in `/api/status` and in the page's share-groups table (headless
Chromium) with the partition and offset, and CRIT in `kafka-pulse check --lag-url` (a fresh process reading the routes),
all from the one judgement the share board made; a plain `check` reads the group once, judges nothing (INFO) and reports
the lag `kafka-share-groups --describe --offsets` prints."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka import ShareConsumer
from selenium import webdriver
from selenium.webdriver.common.by import By

from kafka_pulse.clusters import dev_cluster_config
from kafka_pulse.status.in_process import IN_PROCESS
from pulse.config import PulseConfig, parse_config
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.pulse_process import PulseProcesses
from tests.integration.app.status_support import (
    PAGE_DEADLINE_S,
    Page,
    await_dom,
    chromium,
    console_problems,
    screenshot,
)
from tests.integration.app.test_check_min_isr import run_check
from tests.integration.devstack.test_dev_cluster import produce
from tests.integration.pulse.test_share_groups import start_at_earliest, tool_offsets

pytestmark = pytest.mark.integration


def stalled_group(kafka: KafkaHandle) -> tuple[str, str]:
    """A share group that accepted a first batch and left, with 30 records produced behind it: its start offset
    stays while they wait. Returns (topic, group)."""
    topic = kafka.create_topic("share-surfaces", partitions=1)
    group = f"surf-{uuid.uuid4().hex[:8]}"
    produce(kafka, topic, 50, "s")
    start_at_earliest(kafka, group)
    consumer = ShareConsumer(kafka.client_config(**{"group.id": group}))
    consumer.subscribe([topic])
    try:
        poll(lambda: len(consumer.poll(0.5) or []), lambda n: n > 0, 90, "a first batch for the share consumer")
        consumer.commit_sync()  # accepts the batch (implicit acknowledgement)
    finally:
        consumer.close()
    produce(kafka, topic, 30, "t")  # records wait; nobody consumes them
    return topic, group


def config_for(kafka: KafkaHandle, path: Path, **share: Any) -> tuple[PulseConfig, Path]:
    """The dev cluster with `lag.share_groups` set as given, parsed and written to `path`."""
    settings = {
        "clusters": [dev_cluster_config(kafka.cluster).model_dump(mode="json")],
        "lag": {"offset_refresh_s": 1, "evaluation_log": {"enabled": False}, "share_groups": share},
    }
    text = yaml.safe_dump(settings)
    path.write_text(text)
    return parse_config(text, str(path), {}), path


def lag_section(report: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == "lag")


def share_detail(section: dict[str, Any], group: str) -> dict[str, Any]:
    return next(g for g in section["details"]["share_groups"] if g["group"] == group)


def test_a_stalled_share_group_is_crit_in_check_and_on_the_status_page(
    kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    topic, group = stalled_group(kafka)
    share = {"enabled": True, "refresh_s": 1, "stall_after_s": 3}
    config, path = config_for(kafka, tmp_path / "check.yaml", **share)
    cluster = config.clusters[0].name
    lag = pulse_process.start("lag", yaml.safe_load(path.read_text()), home=tmp_path, name="lag (share)")
    driver: webdriver.Chrome | None = None
    try:
        judged = poll(
            lambda: httpx.get(f"{lag.url}/v3/kafka/{cluster}/sharegroup/{group}", timeout=10).json().get("status"),
            lambda s: bool(s) and s.get("status") == "STALLED",
            60,
            f"{group} STALLED on its route",
        )
        (part,) = judged["partitions"]
        named = f"{topic}-0: start offset {part['start_offset']} unmoved for "

        # /api/status: the board's check section and its share_groups read the share board's verdicts
        def status() -> dict[str, Any]:
            answer: dict[str, Any] = httpx.get(f"{lag.url}/api/status", timeout=10).json()
            return answer

        def stalled_listed(doc: dict[str, Any]) -> bool:
            rows = [g for g in doc.get("share_groups") or [] if g["group"] == group]
            return bool(doc["clusters"]) and bool(rows) and rows[0]["status"] == "STALLED"

        doc = poll(status, stalled_listed, PAGE_DEADLINE_S, f"/api/status listing {group} STALLED", interval_s=1.0)
        page_lag = lag_section(doc["clusters"][0])
        assert page_lag["status"] == "CRIT" and doc["status"] == "CRIT", json.dumps(page_lag, indent=1)
        assert page_lag["details"]["share_groups_source"] == IN_PROCESS
        assert any(r.startswith(f"share group {group} is STALLED -> CRIT: {named}") for r in page_lag["reasons"])
        row = next(g for g in doc["share_groups"] if g["group"] == group)
        assert (row["totallag"], row["cluster"]) == (part["lag"], cluster)
        assert row["reason"].startswith(named) and row["partitions"][0]["start_offset"] == part["start_offset"]

        # the page in a real browser: the share-groups table shows the verdict and names partition and offset
        driver = chromium()
        driver.get(lag.url + "/")
        page = Page(driver, lag.url + "/", kafka, lag, cluster)
        selector = f'#share-groups tr[data-share-group="{group}"]'
        shown = await_dom(
            page,
            lambda: next((r.text for r in driver.find_elements(By.CSS_SELECTOR, selector) if named in r.text), None),
            f"{group}'s row naming {named}",
        )
        assert "STALLED" in shown and str(part["lag"]) in shown
        assert console_problems(page) == []
        screenshot(page, "status-share-group-stalled", "#share-groups-section")

        # `check --lag-url`, a fresh process reading the routes: the same verdict, never judged again
        _, cli = run_check(path, "--lag-url", lag.url)
        cli_lag = lag_section(cli)
        assert cli_lag["status"] == "CRIT", json.dumps(cli_lag, indent=1)
        assert any(r.startswith(f"share group {group} is STALLED -> CRIT: {named}") for r in cli_lag["reasons"])
        assert share_detail(cli_lag, group)["partitions"][0]["start_offset"] == part["start_offset"]
    finally:
        if driver is not None:
            driver.quit()
        assert lag.stop() == 0, lag.log()[-3000:]


def test_a_plain_check_reads_share_groups_once_and_judges_nothing(kafka: KafkaHandle, tmp_path: Path) -> None:
    topic, group = stalled_group(kafka)
    _, path = config_for(kafka, tmp_path / "pulse.yaml", enabled=True)

    def both() -> tuple[dict[str, Any], dict[tuple[str, int], tuple[int | None, int | None]]]:
        return lag_section(run_check(path)[1]), tool_offsets(kafka, group)

    def agree(pair: tuple[dict[str, Any], dict[tuple[str, int], tuple[int | None, int | None]]]) -> bool:
        groups = {g["group"]: g for g in pair[0]["details"].get("share_groups", [])}
        parts = groups[group]["partitions"] if group in groups else []
        return bool(parts) and {(p["topic"], p["partition"]): (p["start_offset"], p["lag"]) for p in parts} == pair[1]

    section, tool = poll(both, agree, 120, "check and kafka-share-groups agreeing on the share group's lag")
    assert section["status"] == "INFO", json.dumps(section, indent=1)  # one read cannot see a stall
    mine = share_detail(section, group)
    assert mine["status"] == "UNKNOWN" and mine["check_status"] == "INFO" and tool[(topic, 0)][1] == mine["totallag"]
    assert mine["totallag"] > 0
    assert f"share group {group} is UNKNOWN: Empty, 0 member(s), lag {mine['totallag']}" in section["reasons"]
    assert section["details"]["share_groups_source"].startswith("one read")
