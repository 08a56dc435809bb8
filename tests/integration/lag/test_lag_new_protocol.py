"""Consumer-protocol (KIP-848) groups on the real cluster, run as a pytest of their own (lag_new_protocol_cases.py):
librdkafka 2.16's consumer-protocol client once crashed the whole test process with SIGSEGV (not reproduced alone),
and a crash there must fail these cases, not end every other test of the run."""

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
@pytest.mark.flaky(reruns=1)  # the crash (or a failure) seen in full runs has never been reproduced alone
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
