"""`kafka-pulse dev stutter` on the real 3-node cluster: it cycles SIGSTOP/SIGCONT on one broker for the time asked
and leaves it running and answering."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_pulse.cli.dev import dev
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def test_dev_stutter_command_leaves_the_broker_running(kafka: KafkaHandle, tmp_path: Path) -> None:
    """The CLI on the real cluster: a short stutter, its cycle count, and the node running and answering after."""
    (tmp_path / "dev").symlink_to(kafka.cluster.home)  # where `kafka-pulse dev` looks under KAFKA_PULSE_HOME
    result = CliRunner().invoke(
        dev, ["stutter", "3", "--stop-ms", "100", "--period-ms", "300", "--for", "1.5"],
        env={"KAFKA_PULSE_HOME": str(tmp_path)},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "stutter done after" in result.output and "node running" in result.output
    pid = kafka.cluster.pids[3]
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state != "T"
    metadata = kafka.admin().list_topics(timeout=10)
    assert 3 in metadata.brokers
