"""Hostile files where kafka-pulse keeps state: the alert spool (pulse/alerts/spool.py) and a Parquet log's
compaction manifest (pulse/parquet_log/compaction.py). One row per file; each must leave the process running, count
what it could not read, deliver or keep everything readable, and touch nothing outside its own directory.

Real files on disk and a real loopback HTTP endpoint (tests/support/receiver.py) standing in for Alertmanager's
POST /api/v2/alerts, so "delivered" means an HTTP request arrived.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pulse.alerts import Alert, AlertCodec, AlertSink
from pulse.alerts.spool import SPOOL_FILE
from pulse.parquet_log.compaction import MANIFEST, recover
from tests.support.receiver import HttpReceiver

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
GOOD = AlertCodec().encode(Alert(labels={"alertname": "KafkaSLOBurnRate", "slo": "kept"}), T0)


@pytest.fixture(scope="module")
def receiver() -> Iterator[HttpReceiver]:
    with HttpReceiver() as started:
        yield started


def posted_slos(receiver: HttpReceiver, after: int) -> list[str]:
    return [a["labels"]["slo"] for r in receiver.requests[after:] if r.path == "/api/v2/alerts" for a in r.json]


# --- the alert spool -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpoolCase:
    content: bytes
    corrupt: int
    """Lines counted corrupt (dropped, reason corrupt) at the first delivery."""
    why: str


SPOOL_CASES = [
    pytest.param(SpoolCase(b"[" * 200_000 + b"]" * 200_000 + b"\n" + GOOD, 1, "RecursionError"), id="200000-deep"),
    pytest.param(SpoolCase(b'{"v":1,"alert":' * 50_000 + b"\n" + GOOD, 1, "RecursionError"), id="deep-cut"),
    pytest.param(SpoolCase(b"[]\n" + GOOD, 1, "not a spool entry"), id="list"),
    pytest.param(SpoolCase(b"null\n" + GOOD, 1, "not a spool entry"), id="null"),
    pytest.param(SpoolCase(b'{"v":2,"alert":{}}\n' + GOOD, 1, "not a spool entry"), id="other-format"),
    pytest.param(SpoolCase(b'{"v":1,"alert":{"labels":[]}}\n' + GOOD, 1, "ValidationError"), id="wrong-types"),
    pytest.param(SpoolCase(b"\xff\xfe\x00garbage\n" + GOOD, 1, "Error"), id="binary"),
    pytest.param(SpoolCase(GOOD + b'{"v":1,"al', 1, "incomplete line"), id="torn-last-line"),
]


@pytest.mark.parametrize("case", SPOOL_CASES)
def test_a_hostile_spool_is_counted_corrupt_and_the_rest_delivered(
    case: SpoolCase, receiver: HttpReceiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / SPOOL_FILE).write_bytes(case.content)
    mark = receiver.mark()
    with caplog.at_level(logging.ERROR), AlertSink(receiver.url, tmp_path) as sink:  # starting must not raise
        result = sink.send([Alert(labels={"alertname": "KafkaSLOBurnRate", "slo": "new"})])

    assert posted_slos(receiver, mark) == ["kept", "new"]
    assert (result.delivered, result.spooled) == (2, 0)
    assert sink.stats.dropped["corrupt"] == case.corrupt
    assert case.why in caplog.text
    assert "Traceback" not in caplog.text


@dataclass(frozen=True)
class PathCase:
    plant: Callable[[Path, Path], None]
    """(spool file path, a victim file outside the spool) -> puts something hostile at the spool path."""
    why: str


def _symlink_to_victim(spool: Path, victim: Path) -> None:
    spool.symlink_to(victim)


def _directory(spool: Path, victim: Path) -> None:
    spool.mkdir()


def _fifo(spool: Path, victim: Path) -> None:
    os.mkfifo(spool)  # opening it to read would wait for a writer for ever


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(PathCase(_symlink_to_victim, "Too many levels of symbolic links"), id="symlink"),
        pytest.param(PathCase(_directory, "not a regular file"), id="directory"),
        pytest.param(PathCase(_fifo, "not a regular file"), id="fifo"),
    ],
)
def test_a_spool_path_that_is_not_a_file_is_never_followed_and_delivery_goes_live(
    case: PathCase, receiver: HttpReceiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool_dir, victim = tmp_path / "spool", tmp_path / "victim"
    spool_dir.mkdir()
    victim.write_bytes(b"not yours\n")
    case.plant(spool_dir / SPOOL_FILE, victim)
    mark = receiver.mark()
    with caplog.at_level(logging.ERROR), AlertSink(receiver.url, spool_dir) as sink:
        result = sink.send([Alert(labels={"alertname": "KafkaSLOBurnRate", "slo": "new"})])

    assert posted_slos(receiver, mark) == ["new"]
    assert result.delivered == 1
    assert sink.stats.spool_errors >= 1
    assert victim.read_bytes() == b"not yours\n"
    assert case.why in caplog.text


# --- compaction manifests ------------------------------------------------------------------------------------------

PART = "part-20260301T120000000000Z-abcdef12-{}.parquet"


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(
            json.dumps({"inputs": ["../victim"], "staged": f".{PART.format(9)}.staged", "output": PART.format(9)}),
            id="parent-input",
        ),
        pytest.param("ABSOLUTE", id="absolute-input"),
        pytest.param(
            json.dumps({"inputs": [PART.format(0)], "staged": "../victim", "output": PART.format(9)}),
            id="parent-staged",
        ),
        pytest.param(
            json.dumps({"inputs": [PART.format(0)], "staged": f".{PART.format(9)}.staged", "output": "../victim"}),
            id="parent-output",
        ),
        pytest.param("[]", id="list"),
        pytest.param("{}", id="empty-object"),
        pytest.param("null", id="null"),
        pytest.param(json.dumps({"inputs": "abc", "staged": 1, "output": None}), id="wrong-types"),
        pytest.param(json.dumps({"inputs": [1, 2], "staged": "x", "output": "y"}), id="number-names"),
        pytest.param("{" * 100_000, id="deep"),
        pytest.param("[" * 200_000 + "]" * 200_000, id="200000-deep"),
        pytest.param("\x00\xff not json", id="binary"),
    ],
)
def test_a_malformed_manifest_is_logged_and_skipped_and_nothing_is_deleted(
    manifest: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "log" / "date=2026-03-01"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("outside the log")
    if manifest == "ABSOLUTE":
        manifest = json.dumps(
            {"inputs": [str(victim)], "staged": f".{PART.format(9)}.staged", "output": PART.format(9)}
        )
    pq.write_table(pa.table({"n": [1]}), folder / PART.format(0))
    (folder / MANIFEST).write_text(manifest, errors="surrogateescape")
    before = sorted(p.name for p in folder.iterdir())

    with caplog.at_level(logging.ERROR):
        assert recover(folder) is False

    assert victim.read_text() == "outside the log"
    assert sorted(p.name for p in folder.iterdir()) == before
    assert "unreadable compaction manifest" in caplog.text
