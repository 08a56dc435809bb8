"""Consumer-protocol (KIP-848) groups on the real cluster, run as a pytest of their own (lag_new_protocol_cases.py), so
a native crash in librdkafka fails these cases instead of ending every other test of the run.

The SIGSEGV that took the whole run down (2026-11-24, full CI runs only, when these cases still ran in the suite's
process on the shared cluster) was not the consumer protocol's: lag's HWM rounds then read every partition of that
cluster, every earlier test's topics included, with an Admin ListOffsets of 5 s request timeout once a second, and
with librdkafka 2.16 a ListOffsets that times out while the answer is on its way crashes the process
(docs/kafka-clients.md). Alone the cluster has few partitions and the rounds never time out. Lag has read offsets
through a consumer since (be28f6d, guarded by tests/integration/lag/test_lag_offsets_timeouts.py); the later
failure of these cases was the evaluation log's own clock (8a62eb8). No retry: a failure here is a defect.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
CASES = Path(__file__).with_name("lag_new_protocol_cases.py")
EXPECTED = 7
"""Cases in lag_new_protocol_cases.py: four protocol x ingestion workloads, a share group, two upgrades."""


@pytest.mark.timeout(1800)
def test_consumer_protocol_cases_in_their_own_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra", str(CASES)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1700,
        check=False,
    )
    report = done.stdout[-8000:] + done.stderr[-4000:]
    assert done.returncode == 0, report
    assert f"{EXPECTED} passed" in done.stdout, report
