"""Where Kafka 4.4 differs from 4.3 for the dev stack (#24 point 6): ConfigCommand moved from the broker's core jar
to kafka-tools. On a real 1-node cluster of each line, the demo's consumer quota (devstack/traffic.py) is set through
the ConfigCommand that line has, and the broker then describes it."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from pathlib import Path

import pytest

from devstack.runtime import config_command_main, ensure_config_command
from devstack.topology import Security
from devstack.traffic import set_consumer_quota
from pulse.paths import cache_dir
from tests.fixtures.kafka import _start

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("version", ["4.3.1", "4.4.0"])
def test_the_consumer_quota_is_set_through_the_config_command_of_each_line(tmp_path: Path, version: str) -> None:
    client = f"quota-{uuid.uuid4().hex[:6]}"
    with contextlib.contextmanager(_start)(tmp_path / "kafka", 1, version, Security.PLAINTEXT, f"quota-{version}") as k:
        runtime = ensure_config_command(version, cache_dir())
        set_consumer_quota(runtime, k.bootstrap_servers, client, 2048, "quota test")
        argv = [
            "java", "-cp", runtime.classpath, config_command_main(version), "--bootstrap-server", k.bootstrap_servers,
            "--describe", "--entity-type", "clients", "--entity-name", client,
        ]  # fmt: skip
        described = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    assert f"Quota configs for client-id '{client}' are consumer_byte_rate=2048.0" in described, described
