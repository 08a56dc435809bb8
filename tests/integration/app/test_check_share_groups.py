"""A share group's verdict on every surface, from a real share consumer on the 4.3.1 dev cluster (#24 point 1): a
group whose records wait behind an unmoved start offset is STALLED on lag's route, CRIT in the status page's `lag`
section and listed in `/api/status` with the partition and offset, CRIT in `kafka-pulse check --lag-url` (a fresh
process reading the routes), all from the one judgement the share board made; a plain `check` reads the group once,
judges nothing (INFO) and reports the lag `kafka-share-groups --describe --offsets` prints."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka import ShareConsumer

from kafka_pulse.clusters import dev_cluster_config
from kafka_pulse.status.board import IN_PROCESS, StatusBoard, StatusSources, in_process_check
from kafka_pulse.status.lag_snapshot import LagSnapshots
from lag.assembly import LagRunner
from lag.serve.routes import invalid_request
from pulse.config import PulseConfig, parse_config
from pulse.http import HttpApp, HttpServer, Router
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
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


def test_a_stalled_share_group_is_crit_in_check_and_on_the_status_page(kafka: KafkaHandle, tmp_path: Path) -> None:
    topic, group = stalled_group(kafka)
    config, path = config_for(kafka, tmp_path / "pulse.yaml", enabled=True, refresh_s=1, stall_after_s=3)
    cluster = config.clusters[0].name
    runner = LagRunner(config, config.clusters, state=tmp_path / "state")
    server = HttpServer(HttpApp(Router(runner.api.routes(), invalid_request)), "127.0.0.1", 0).start()
    runner.start()
    try:
        url = f"{server.url}/v3/kafka/{cluster}/sharegroup/{group}"

        def route() -> dict[str, Any]:
            answer = httpx.get(url, timeout=10)
            return answer.json()["status"] if answer.status_code == 200 else {}

        judged = poll(route, lambda s: s.get("status") == "STALLED", 60, f"{group} STALLED on its route")
        (part,) = judged["partitions"]
        named = f"{topic}-0: start offset {part['start_offset']} unmoved for "

        # the status page: its board's check and its document read the share board's verdicts
        assert runner.share_board is not None
        snapshots = LagSnapshots(runner.service, config.lag.status_page_groups)
        check = in_process_check(None, snapshots, runner, shares=runner.share_board)
        sources = StatusSources(config, config.clusters, lag=runner.service, shares=runner.share_board)
        board = StatusBoard(sources, check=check, lag=snapshots)
        board.refresh()
        doc = json.loads(board.encoded().body)
        (report,) = doc["clusters"]
        page_lag = lag_section(report)
        assert page_lag["status"] == "CRIT" and doc["status"] == "CRIT", json.dumps(page_lag, indent=1)
        assert page_lag["details"]["share_groups_source"] == IN_PROCESS
        assert any(r.startswith(f"share group {group} is STALLED -> CRIT: {named}") for r in page_lag["reasons"])
        row = next(g for g in doc["share_groups"] if g["group"] == group)
        assert (row["status"], row["totallag"], row["cluster"]) == ("STALLED", part["lag"], cluster)
        assert row["reason"].startswith(named) and row["partitions"][0]["start_offset"] == part["start_offset"]

        # `check --lag-url`, a fresh process reading the routes: the same verdict, never judged again
        _, cli = run_check(path, "--lag-url", server.url)
        cli_lag = lag_section(cli)
        assert cli_lag["status"] == "CRIT", json.dumps(cli_lag, indent=1)
        assert any(r.startswith(f"share group {group} is STALLED -> CRIT: {named}") for r in cli_lag["reasons"])
        assert share_detail(cli_lag, group)["partitions"][0]["start_offset"] == part["start_offset"]
    finally:
        runner.stop()
        server.stop()


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
