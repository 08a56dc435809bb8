"""A process whose stdout and stderr pipe lost its reader (`cmd | head`) goes on to the end of its teardown once its
logging is configured: prints and log lines into the closed pipe are dropped, the exit status stays 0."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pulse.lifecycle import configure_logging

REPO = Path(__file__).resolve().parents[3]
CHILD = textwrap.dedent(
    """
    import logging, sys
    from pathlib import Path
    from pulse.lifecycle import configure_logging
    configure_logging()
    configure_logging()  # twice: still one guard
    sys.stdin.read()  # the test closes the pipe's read end, then our stdin
    try:
        for i in range(1000):
            print("line", i, flush=True)
            logging.getLogger("teardown").warning("stopping part %d", i)
    finally:
        Path(sys.argv[1]).write_text(sys.stdout.isatty() and "tty" or "done")
    """
)


def test_writes_into_a_pipe_whose_reader_is_gone_never_abort_the_teardown(tmp_path: Path) -> None:
    done = tmp_path / "done"
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(done)],
        stdin=subprocess.PIPE, stdout=write_end, stderr=write_end, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    os.close(write_end)
    os.close(read_end)  # the reader is gone before the child writes anything
    _, _ = child.communicate(b"", timeout=60)
    assert child.returncode == 0
    assert done.read_text() == "done"


def test_a_stream_already_replaced_is_left_alone(capsys: object) -> None:
    before = sys.stdout, sys.stderr
    configure_logging()
    assert (sys.stdout, sys.stderr) == before
