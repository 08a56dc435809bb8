"""A Python script run in a child process that prints one JSON line last: how a test watches for librdkafka's
native aborts, which would take the test process down with them."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run_child(script: str, *args: str, timeout_s: float) -> dict[str, Any]:
    """Run `script` with `args`; its last stdout line, as JSON. An exit other than 0 fails the test with the
    child's stderr (a negative code is the signal that ended it, -6 for an abort)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout_s
    )  # fmt: skip
    assert done.returncode == 0, f"exit {done.returncode} (a negative code is a signal): {done.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
