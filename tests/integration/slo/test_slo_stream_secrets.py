"""`slo stream` on a SASL_SSL cluster, with our loggers and Spark's own (log4j, through SPARK_CONF_DIR) at DEBUG: the
SCRAM password goes into the Kafka source's JAAS option, and no line of the stream's output may show it (Spark prints
plans, options and the Kafka clients' configs at DEBUG)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from confluent_kafka.admin import NewTopic

from canary.sli_log import SCHEMA
from kafka_pulse.clusters import dev_cluster_config
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DEBUG_LAUNCHER = (
    "import logging, sys; from pulse.lifecycle import configure_logging; configure_logging(logging.DEBUG); "
    "from kafka_pulse.cli.main import cli; cli(sys.argv[1:], prog_name='kafka-pulse')"
)
SPARK_AT_DEBUG = """\
rootLogger.level = debug
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss}} %p %c: %m%n
"""
"""Spark's log4j at DEBUG into a file: PySpark filters its console appenders to WARN (the shell's level)."""


def one_probe_row() -> dict[str, object]:
    return {name: None for name in SCHEMA.names} | {
        "time": datetime.now(UTC),
        "cluster": "dev",
        "topic": "__kafka_pulse_canary",
        "partition": 0,
        "producer_id": "p",
        "sequence": 0,
        "produce_ok": True,
        "lost": False,
        "duplicate": False,
        "out_of_order": False,
    }


def test_the_stream_logs_no_sasl_password_with_spark_at_debug(kafka_sasl: KafkaHandle, tmp_path: Path) -> None:
    model = dev_cluster_config(kafka_sasl.cluster)
    assert model.security.sasl is not None
    password = model.security.sasl.password.get_secret_value()
    cluster = model.model_dump(mode="json")
    cluster["security"]["sasl"]["password"] = "${PULSE_TEST_SASL_PASSWORD}"
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    admin = kafka_sasl.admin()
    admin.create_topics([NewTopic(prefix + "canary", 1, 1)])[prefix + "canary"].result(timeout=30)
    (tmp_path / "canary").mkdir()
    pq.write_table(pa.Table.from_pylist([one_probe_row()], schema=SCHEMA), tmp_path / "canary" / "part-0.parquet")
    config = {
        "clusters": [cluster],
        "sli_sink": {"cluster": cluster["name"], "topic_prefix": prefix},
        "slo": {"spark_master": "local[1]", "driver_memory": "512m"},
        "slos": [{"name": "produce", "source": {"type": "events", "path": "canary"}, "good": "produce_ok",
                  "total": "1", "objective": 99.0, "window": "30d"}],
    }  # fmt: skip
    (tmp_path / "pulse.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "spark-conf").mkdir()
    spark_log = tmp_path / "spark.log"
    (tmp_path / "spark-conf" / "log4j2.properties").write_text(SPARK_AT_DEBUG.format(path=spark_log))
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(tmp_path / "home"),
           "PULSE_TEST_SASL_PASSWORD": password, "SPARK_CONF_DIR": str(tmp_path / "spark-conf")}  # fmt: skip
    stderr = tmp_path / "stderr.log"
    register_log("slo stream at DEBUG (stderr)", stderr)
    argv = [sys.executable, "-c", DEBUG_LAUNCHER, "slo", "stream", "--config", str(tmp_path / "pulse.yaml"),
            "--state-dir", str(tmp_path / "state"), "--once", "--json"]  # fmt: skip
    with stderr.open("wb") as err:
        done = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=err, timeout=600, check=False)
    log = stderr.read_text(errors="replace")
    assert done.returncode == 0, log[-4000:]
    log += spark_log.read_text(errors="replace")
    assert " DEBUG org.apache.spark" in log, log[-2000:]  # Spark really logged at DEBUG
    assert "sasl.jaas.config" in log, log[-2000:]  # the Kafka source's client config was printed
    leaks = [line for line in (log + done.stdout.decode(errors="replace")).splitlines() if password in line]
    assert leaks == [], leaks[:5]
    state = [p for p in (tmp_path / "state").rglob("*") if p.is_file()]
    assert not [p for p in state if password.encode() in p.read_bytes()]  # nor the checkpoint
