"""Clean exits whatever stdout is (issue 23 point 7): `bash scripts/demo.sh | tee demo.log` and `kafka-pulse run |
head`, stopped once the pipe's reader is gone (a terminal's Ctrl-C reaches `tee` too), still stop every process
they started: brokers, perf clients, Prometheus, Alertmanager, `run` and its Spark JVM; so do the streaming
commands `slo stream` and `audit reconcile` on SIGTERM, their query stopped and exit 0. Each command gets a
temporary `KAFKA_PULSE_HOME` that every process it starts inherits; /proc says which are left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import PollTimeout, poll
from pulse.process import pid_alive, stop_pid
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.logs import register_log
from tests.fixtures.pulse_process import PulseProcesses
from tests.integration.app.status_support import seed_sli_log
from tests.integration.app.test_demo import processes_with

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
GONE_WITHIN_S = 180.0
"""From the signal to the last process gone: `run` may take up to its 60 s grace, then Prometheus, Alertmanager, the
perf clients and three brokers stop one after another on a loaded 2-core host."""
STREAM_START_S = 600.0
"""A streaming command's start: its JVM, an Ivy lookup of Spark's Kafka source (cached after the first) and the
query's start, on a loaded 2-core host."""


def spark_jvms(marker: bytes) -> list[int]:
    """The live processes under `marker` that run Spark's JVM (PySpark's gateway, launched by spark-submit)."""
    found = []
    for pid in processes_with(marker):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"java" in cmdline and b"org.apache.spark" in cmdline and pid_alive(pid):
            found.append(pid)
    return found


def left_running(marker: bytes) -> list[int]:
    """Processes under `marker` still alive after the stop, awaited for `GONE_WITHIN_S`; [] when all are gone."""
    try:
        return poll(
            lambda: [pid for pid in processes_with(marker) if pid_alive(pid)],
            lambda pids: pids == [],
            GONE_WITHIN_S,
            "every process the command started gone",
        )
    except PollTimeout as exc:
        return list(exc.last) if isinstance(exc.last, list) else [-1]


def reap(marker: bytes) -> None:
    """Never leak into the rest of the run, whatever the assertions say."""
    for pid in processes_with(marker):
        stop_pid(pid, grace_s=5)


@pytest.mark.parametrize("stop", ["ctrl-c to the group", "sigterm to run"])
def test_run_into_a_pipe_whose_reader_died_stops_itself_and_spark(
    pulse_process: PulseProcesses, tmp_path: Path, stop: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    marker = f"KAFKA_PULSE_HOME={home}".encode()
    sli = home / "sli"
    seed_sli_log(sli, "nowhere")
    config: dict[str, Any] = {
        "clusters": [{"name": "nowhere", "bootstrap_servers": "127.0.0.1:9"}],
        "collectors": {"enabled": False},
        "canary": {"enabled": False},
        "lag": {"enabled": False},
        "slo": {"schedule_s": 5, "spark_master": "local[1]"},
        "slos": [
            {
                "name": "produce-availability",
                "source": {"type": "events", "path": str(sli)},
                "good": "produce_ok",
                "total": "NOT duplicate",
                "objective": 99.9,
            }
        ],
    }
    run = pulse_process.start("run", config, home=home, piped=True)
    try:
        poll(lambda: spark_jvms(marker), bool, 300, "run's Spark JVM")
        assert run.reader is not None
        run.reader.kill()  # the pipe's reader goes first, as `head` or a Ctrl-C'd `tee` does
        run.reader.wait()
        if stop == "ctrl-c to the group":
            os.killpg(run.pid, signal.SIGINT)  # run, and Spark's JVM in its process group
        else:
            run.popen.send_signal(signal.SIGTERM)
        try:
            code: int | None = run.popen.wait(timeout=GONE_WITHIN_S)
        except subprocess.TimeoutExpired:
            code = None
        left = left_running(marker)
    finally:
        reap(marker)
        run.stop(grace_s=0)
    assert left == [], f"left running: {left}; log:\n{run.log()[-3000:]}"
    assert code == 0, f"exit {code}; log:\n{run.log()[-3000:]}"


def owned_pids(path: Path) -> dict[str, int] | None:
    """The demo's pids.json once written whole (it appears once `run` answers), else None."""
    try:
        found: dict[str, int] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found


def as_a_terminals_foreground_job() -> None:
    """Ctrl-C's SIGINT and SIGQUIT at their defaults, as a shell gives its foreground job: pytest started as a
    background job of a non-interactive shell passes them on ignored, and bash cannot trap a signal ignored on entry,
    so demo.sh would wait for its supervisor and exit 0 (seen in a fresh-clone run started with `&`)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def test_demo_piped_into_tee_stopped_by_ctrl_c_leaves_nothing_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    marker = f"KAFKA_PULSE_HOME={home}".encode()
    env = {**os.environ, "KAFKA_PULSE_HOME": str(home)}
    env.pop("KAFKA_PULSE_CONFIG", None)
    out_path = tmp_path / "demo.out"
    register_log("demo.sh | tee", out_path)
    read_end, write_end = os.pipe()
    try:
        tee = subprocess.Popen(["tee", str(out_path)], stdin=read_end, stdout=subprocess.DEVNULL)
        demo = subprocess.Popen(
            ["bash", str(REPO / "scripts" / "demo.sh")],
            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, preexec_fn=as_a_terminals_foreground_job,
        )  # fmt: skip
    finally:
        os.close(read_end)
        os.close(write_end)
    owned: dict[str, int] = {}
    try:
        pids_path = home / "demo" / "pids.json"
        found = poll(
            lambda: owned_pids(pids_path) or ({} if demo.poll() is not None else None),
            lambda pids: pids is not None,
            900,
            "the demo's pids.json (written once run answers)",
        )
        assert demo.poll() is None and found, out_path.read_text()[-3000:]
        owned = found
        clients = {"producer-perf-demo-producer", "prometheus", "alertmanager", "kafka-1", "kafka-2", "kafka-3"}
        assert {"run"} | clients <= set(owned), owned
        jvm = poll(lambda: spark_jvms(marker), bool, 300, "run's Spark JVM (the demo SLO's first evaluation)")
        tee.kill()  # Ctrl-C reaches tee too, and it is gone before the demo writes its goodbyes
        tee.wait()
        os.killpg(demo.pid, signal.SIGINT)  # the rest of the foreground process group: bash and the supervisor
        try:
            code: int | None = demo.wait(timeout=600)
        except subprocess.TimeoutExpired:
            code = None
        left = left_running(marker)
    finally:
        if tee.poll() is None:
            tee.kill()
        if demo.poll() is None:
            demo.kill()
        reap(marker)
    assert left == [], f"left running: {left}; the demo's output:\n{out_path.read_text()[-3000:]}"
    assert not [name for name, pid in owned.items() if pid_alive(pid)], owned
    assert not [pid for pid in jvm if pid_alive(pid)], jvm
    assert code == 130, f"exit {code}"  # bash's exit for SIGINT, after its EXIT trap cleaned up


STREAMING = {
    "slo stream": ["canary"],
    "audit reconcile": ["audit-broker", "audit-client"],
}
"""The streaming commands and the SLI sink streams whose topics each reads (canary/sli_log.py, audit/streams.py)."""


def streaming_config(kafka: KafkaHandle, command: str) -> dict[str, Any]:
    """A config naming the shared cluster as the SLI sink's, with fresh topics for `command`'s streams (and, for
    `slo stream`, one SLO over the canary's events)."""
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    admin = kafka.admin()
    names = [prefix + stream for stream in STREAMING[command]]
    replicas = kafka.cluster.spec.replication_factor
    for future in admin.create_topics([NewTopic(n, 1, replicas) for n in names]).values():
        future.result(timeout=30)
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    config: dict[str, Any] = {
        "clusters": [cluster],
        "sli_sink": {"cluster": cluster["name"], "topic_prefix": prefix},
        "slo": {"spark_master": "local[1]", "driver_memory": "512m"},
        "audit": {"reconcile": {"trigger_s": 1}},
    }
    if command == "slo stream":
        config["slos"] = [
            {
                "name": "produce",
                "source": {"type": "events", "path": "canary"},
                "good": "produce_ok",
                "total": "NOT duplicate",
                "objective": 99.0,
                "window": "30d",
            }
        ]
    return config


@pytest.mark.parametrize("command", sorted(STREAMING))
def test_a_streaming_command_into_a_dead_pipe_stops_its_query_and_spark_on_sigterm(
    kafka: KafkaHandle, tmp_path: Path, command: str
) -> None:
    """`slo stream` and `audit reconcile` run until stopped, as `run` does: SIGTERM (a service manager's stop) with
    the output's reader gone stops the query and exits 0, and Spark's JVM and workers are gone."""
    home = tmp_path / "home"
    home.mkdir()
    marker = f"KAFKA_PULSE_HOME={home}".encode()
    config_path = tmp_path / "pulse.yaml"
    config_path.write_text(yaml.safe_dump(streaming_config(kafka, command)))
    log_path = tmp_path / "command.log"
    register_log(f"kafka-pulse {command}", log_path)
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", *command.split(), "--config", str(config_path)]
    argv += ["--state-dir", str(tmp_path / "state"), "--json"]
    if command == "slo stream":
        argv += ["--trigger", "1s"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(home)}
    env.pop("KAFKA_PULSE_CONFIG", None)
    read_end, write_end = os.pipe()
    try:
        tee = subprocess.Popen(["tee", str(log_path)], stdin=read_end, stdout=subprocess.DEVNULL)
        process = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    finally:
        os.close(read_end)
        os.close(write_end)
    try:
        running = f"{command}: running until SIGTERM or Ctrl-C"
        poll(
            lambda: log_path.read_text() if log_path.exists() else "",
            lambda text: running in text or process.poll() is not None,
            STREAM_START_S,
            f"{command}'s query running",
        )
        assert process.poll() is None, log_path.read_text()[-3000:]
        assert spark_jvms(marker), "no Spark JVM under the command"
        tee.kill()  # the output's reader goes first
        tee.wait()
        process.send_signal(signal.SIGTERM)
        try:
            code: int | None = process.wait(timeout=GONE_WITHIN_S)
        except subprocess.TimeoutExpired:
            code = None
        left = left_running(marker)
    finally:
        if tee.poll() is None:
            tee.kill()
        reap(marker)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert left == [], f"left running: {left}; log:\n{log_path.read_text()[-3000:]}"
    assert code == 0, f"exit {code}; log:\n{log_path.read_text()[-3000:]}"
