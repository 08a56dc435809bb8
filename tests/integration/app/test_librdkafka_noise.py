"""While a cluster is unreachable, every librdkafka client (lag's, the canary's, the collectors' cluster-state
client, all of them in `run`) writes nothing raw to stderr (they wrote every reconnect attempt, about 1.6 KB/s):
their lines reach Python logging once a minute per kind and are counted on /metrics. The unreachable cluster is a
closed loopback port: what librdkafka does there is what it does for a dead cluster."""

from __future__ import annotations

import re
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from lag.assembly import LagRunner
from pulse.config import ClusterConfig, PulseConfig
from pulse.names import LIBRDKAFKA_LOGS_METRIC
from pulse.polling import poll
from pulse.ports import free_ports, wait_until
from tests.fixtures.pulse_process import PulseProcess, PulseProcesses

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]


def test_an_unreachable_cluster_is_counted_not_written_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    (port,) = free_ports(1)
    cluster = ClusterConfig(name="gone", bootstrap_servers=[f"127.0.0.1:{port}"])
    config = PulseConfig.model_validate(
        {"clusters": [cluster.model_dump(mode="json")], "lag": {"offset_refresh_s": 0.2}}
    )
    registry = CollectorRegistry()
    runner = LagRunner(config, [cluster], registry=registry)

    def suppressed() -> float:
        return sum(
            sample.value
            for family in registry.collect()
            if family.name == LIBRDKAFKA_LOGS_METRIC
            for sample in family.samples
            if sample.labels.get("outcome") == "suppressed"
        )

    before = librdkafka_threads()
    runner.start()
    try:
        assert wait_until(lambda: suppressed() >= 20, 60, interval_s=0.2), suppressed()
    finally:
        runner.stop()
    # Lines about other ports come from clients an earlier test left behind in this process, not from these.
    ours = [line for line in capfd.readouterr().err.splitlines() if f"127.0.0.1:{port}" in line]
    assert not ours, ours[-10:]
    # Stopped means every client closed: a client left open goes on reconnecting (and writing) for good.
    assert wait_until(lambda: librdkafka_threads() <= before, 30, interval_s=0.2), (before, librdkafka_threads())


def librdkafka_threads() -> int:
    """Threads of this process that librdkafka started (named `rdk:main`, `rdk:broker1`, ...): each client has
    some until it is closed or collected."""
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            count += (task / "comm").read_text().startswith("rdk:")
        except OSError:  # the thread ended while being listed
            continue
    return count


COMMANDS = ("canary", "collect", "run")
MIN_SUPPRESSED = {"canary": 10, "collect": 3, "run": 10}
"""Suppressed lines each command must have counted: proof there was chatter to thin. collect's clients are Admin
clients, which reconnect on librdkafka's backoff (up to 10 s apart, docs/kafka-clients.md): 9 lines in 30 s on one
run, 11 in 90 s on a loaded host, against some 370 in 30 s before. The canary's producer and readers still reconnect
every ~50 ms while no broker is up (librdkafka's on-demand connections)."""
RAW_LINE = re.compile(r"^%\d+\|\d+\.\d+\|", re.MULTILINE)
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")
"""The time logging's default format starts each of our lines with (local time, to the millisecond)."""


def logged_by(line: str, moment: datetime) -> bool:
    """The line was written at or before `moment` (a line without a time is counted, to be safe): what a counter
    read at `moment` can account for. The limiter's next minute may log again while the processes stop."""
    found = STAMP.match(line)
    return found is None or datetime.strptime(".".join(found.groups()), "%Y-%m-%d %H:%M:%S.%f") <= moment


"""How librdkafka writes a log line to stderr when no `logger` takes it: `%3|1764000000.123|FAIL|rdkafka#...`."""


def _counts(port: int) -> dict[str, float]:
    """`kafka_pulse_librdkafka_logs_total` of one listener, summed by outcome; empty while it does not answer."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5, trust_env=False).text
    except httpx.HTTPError:
        return {}
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == LIBRDKAFKA_LOGS_METRIC:
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    outcome = sample.labels["outcome"]
                    totals[outcome] = totals.get(outcome, 0.0) + sample.value
    return totals


def test_canary_collect_and_run_write_a_bounded_number_of_lines_and_count_the_rest(
    pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    """The three commands at once against a closed port (a cluster down): each exports the counter on its own
    /metrics, writes no raw librdkafka line, and logs at most one line per kind and client part."""
    (closed,) = free_ports(1)
    cluster = {"name": "gone", "bootstrap_servers": [f"127.0.0.1:{closed}"]}
    sections: dict[str, dict[str, Any]] = {
        "canary": {"canary": {"topic": "pulse-noise", "interval_s": 0.5}},
        "collect": {"collectors": {"scrape_interval_s": 1}},
        "run": {"canary": {"topic": "pulse-noise", "interval_s": 0.5}, "lag": {"offset_refresh_s": 0.5}},
    }
    procs: dict[str, PulseProcess] = {}
    started = time.monotonic()
    try:
        for command in COMMANDS:
            home = tmp_path / command
            home.mkdir()
            config = {"clusters": [cluster], **sections[command]}
            # Listening is enough: the counter is on /metrics from the start, whatever the cluster's state.
            procs[command] = pulse_process.start(command, config, home=home, ready=None, name=f"noise {command}")

        def suppressed() -> dict[str, dict[str, float]]:
            for command, proc in procs.items():
                assert proc.alive(), f"{command} exited: {proc.log()[-3000:]}"
            return {command: _counts(proc.port) for command, proc in procs.items()}

        def enough(counts: dict[str, dict[str, float]]) -> bool:
            return all(counts[c].get("suppressed", 0) >= MIN_SUPPRESSED[c] for c in procs)

        poll(suppressed, enough, 90, f"suppressed lines counted, at least {MIN_SUPPRESSED}", 0.5)
        counts = {command: _counts(proc.port) for command, proc in procs.items()}
        counted_at = datetime.now()
    finally:
        for proc in procs.values():
            proc.popen.send_signal(signal.SIGTERM)  # all at once: they stop side by side
        for proc in procs.values():
            proc.stop()
    elapsed_s = time.monotonic() - started
    for command, proc in procs.items():
        output = proc.log()
        assert not RAW_LINE.search(output), f"{command} wrote raw librdkafka lines: {output[-2000:]}"
        ours = [line for line in output.splitlines() if "librdkafka" in line and logged_by(line, counted_at)]
        # Within a minute the limiter logs each (cluster, kind) once; everything else was only counted. Lines
        # after the counters were read (a new minute while the three stop) are not in their figures.
        assert len(ours) <= counts[command].get("logged", 0) <= 30, (command, counts[command], ours)
        assert counts[command]["suppressed"] >= MIN_SUPPRESSED[command], (command, counts[command])
        print(f"{command}: {len(ours)} librdkafka lines in {elapsed_s:.0f} s, {counts[command]}")
