"""Debian's `promtool` run on rule files, for the tests that check rules and their hand-written cases."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pulse.process import require_program


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`promtool ARGS` in `cwd`, its output captured; promtool missing fails (naming its package), never skips."""
    argv = [require_program("promtool", "prometheus"), *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
