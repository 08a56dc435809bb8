"""The alert path survives its own failures, on a real Alertmanager running examples/alertmanager.yml and the
PagerDuty stand-in: while Alertmanager is down, the spool directory is removed, made read-only (`chattr +i` on
the directory and its files: root ignores permission bits, not the immutable flag) and filled (a real 64 KiB
tmpfs filled to the last byte: ENOSPC at the write). The lag notifier's thread runs through all of it; afterwards
every open incident reaches PagerDuty, including one opened while nothing could be spooled, and the SLO schedule
(on the same sink) is still running.

The notifier is the real one (lag/notify/incidents.py) on a LagService fed by hand (a group's commits stopped while its
topic grew), so no Kafka is needed for what is tested here: the sink, its spool and the notifier's loop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack.alertmanager import Alertmanager
from kafka_pulse.runner.slo_schedule import SloSchedule
from lag.notify.incidents import IncidentBook, LagNotifier
from lag.protocol import Status
from lag.service import LagService
from pulse.alerts import AlertSink, Incidents
from pulse.config import LagConfig, SloConfig
from pulse.ports import wait_until
from slo.alerting import SloAlertDelivery
from tests.support.receiver import PAGERDUTY_PATH, HttpReceiver, ReceivedRequest

pytestmark = pytest.mark.integration

CYCLE_S = 1.0


@contextlib.contextmanager
def small_tmpfs(mountpoint: Path, size: str = "64k") -> Iterator[Path]:
    """A size-capped tmpfs at `mountpoint`, unmounted at the end (root and mount(8) are what the suite runs with)."""
    mountpoint.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["chattr", "-R", "-i", str(mountpoint)], check=False, capture_output=True)
        subprocess.run(["umount", str(mountpoint)], check=True)


def no_spark() -> Any:
    raise RuntimeError("no Spark in this test")


def immutable(*paths: Path, on: bool) -> None:
    subprocess.run(["chattr", "+i" if on else "-i", *map(str, paths)], check=True)


def stop_group(service: LagService, group: str) -> None:
    """A consumer group whose commits stopped a minute ago while its partition grew: ERR (a page)."""
    now_ms = int(time.time() * 1000)
    with service.locked() as store:
        store.add_hwm("local", f"t-{group}", 0, 100, now_ms - 60_000)
        store.add_commit("local", group, f"t-{group}", 0, 10, now_ms - 60_000, now_ms - 60_000)
        store.add_commit("local", group, f"t-{group}", 0, 20, now_ms - 50_000, now_ms - 50_000)


def paged(receiver: HttpReceiver, group: str, after: int, timeout_s: float = 60.0) -> dict[str, Any]:
    def matches(request: ReceivedRequest) -> bool:
        body = request.json
        return (
            request.path == PAGERDUTY_PATH
            and isinstance(body, dict)
            and body.get("event_action") == "trigger"
            and body.get("payload", {}).get("custom_details", {}).get("group") == group
        )

    event = receiver.wait_for(matches, timeout_s=timeout_s, after=after).json
    assert isinstance(event, dict)
    return event


def fill(directory: Path) -> None:
    """Take every free byte of the file system `directory` is on."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * chunk)
    finally:
        os.close(fd)
    assert os.statvfs(directory).f_bavail == 0


def test_spool_removed_read_only_and_full_while_alertmanager_is_down_loses_no_open_incident(
    example_alertmanager: Alertmanager, http_receiver: HttpReceiver, tmp_path: Path
) -> None:
    first, second = f"g1-{uuid.uuid4().hex[:6]}", f"g2-{uuid.uuid4().hex[:6]}"
    service = LagService(LagConfig(mode="burrow", intervals=2))
    stop_group(service, first)
    with small_tmpfs(tmp_path / "disk") as disk:
        spool_dir = disk / "alert-spool"
        sink = AlertSink(example_alertmanager.url, spool_dir, max_spool_bytes=1 << 20, timeout_s=2, retry_after_s=1)
        book = IncidentBook(Status.ERR)
        notifier = LagNotifier(service, book, Incidents(resend_interval_s=CYCLE_S), sink, CYCLE_S)
        # The SLO schedule on the same sink: with no Spark here each evaluation fails, and each failed cycle still
        # hands the sink its held alerts - the call that used to raise out of the schedule and end its thread.
        delivery = SloAlertDelivery(sink, Incidents(resend_interval_s=CYCLE_S))
        schedule = SloSchedule([], SloConfig(schedule_s=CYCLE_S), no_spark, owns_session=False, delivery=delivery)
        mark = http_receiver.mark()
        notifier.start()
        schedule.start()
        try:
            paged(http_receiver, first, mark)  # the path works before the faults

            with example_alertmanager.outage():
                # 1. The spool directory is removed: re-created (0700) at the next write, alerts spooled again.
                assert wait_until(lambda: sink.stats.spooled > 0, 30, interval_s=0.1)
                shutil.rmtree(spool_dir)
                spooled = sink.stats.spooled
                assert wait_until(lambda: sink.stats.spooled > spooled and spool_dir.is_dir(), 30, interval_s=0.1)
                assert oct(spool_dir.stat().st_mode & 0o777) == "0o700"

                # 2. Read-only: the directory and its files immutable; nothing can be written, nothing raises.
                files = sorted(spool_dir.iterdir())
                immutable(spool_dir, *files, on=True)
                errors = sink.stats.spool_errors
                assert wait_until(lambda: sink.stats.spool_errors > errors, 30, interval_s=0.1)
                stop_group(service, second)  # a new incident while nothing can be spooled nor posted
                assert wait_until(lambda: book.open.keys() >= {("local", first), ("local", second)}, 30, 0.1)
                immutable(spool_dir, *files, on=False)

                # 3. Full: the tmpfs has no byte left; appends fail with ENOSPC and are cut back.
                fill(disk)
                size = (spool_dir / "alerts.jsonl").stat().st_size
                errors = sink.stats.spool_errors
                assert wait_until(lambda: sink.stats.spool_errors > errors + 1, 30, interval_s=0.1)
                assert (spool_dir / "alerts.jsonl").stat().st_size == size  # no half entry left behind
                assert sink.spool.entries == len((spool_dir / "alerts.jsonl").read_bytes().splitlines())
                assert not list(spool_dir.glob("*.tmp"))
                (disk / "filler").unlink()
                mark = http_receiver.mark()
                assert notifier.is_alive() and schedule.is_alive()
                cycles = schedule.runs["failed"]

            # Alertmanager is back: every open incident is delivered, the one opened during the faults included.
            paged(http_receiver, second, mark)
            assert wait_until(lambda: sink.pending() == [], 60, interval_s=CYCLE_S)
            active = {a["labels"].get("group") for a in example_alertmanager.alerts(active_only=True)}
            assert {first, second} <= active
            last = notifier.last_success_s
            assert wait_until(lambda: (notifier.last_success_s or 0) > (last or 0), 30, interval_s=0.1)
            assert notifier.is_alive() and notifier.failures == 0
            assert wait_until(lambda: schedule.runs["failed"] > cycles, 30, interval_s=0.1)  # still scheduling
            assert schedule.is_alive() and schedule.last_error is not None and "no Spark" in schedule.last_error
            assert sink.stats.dropped["spool_error"] > 0  # counted, as docs/alerting.md says
        finally:
            schedule.stop()
            notifier.stop()
            sink.close()
