"""A process that spools SLI events and waits to be killed: `python -m tests.support.sli_sink_child SPOOL_DIR
BOOTSTRAP STREAM FIRST COUNT READY_FILE`. It offers rows FIRST..FIRST+COUNT-1 (the test stream of
tests/integration/pulse/test_sli_sink.py), touches READY_FILE once they are all in its spool, and sleeps until a
signal ends it: the crashed process of the restart test."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from pulse.polling import poll
from pulse.sli_sink import KafkaDelivery, SliSink
from tests.support.sli_rows import rows, stream


def main(argv: list[str]) -> None:
    spool_dir, bootstrap, name, first, count, ready = argv
    delivery = KafkaDelivery({"bootstrap.servers": bootstrap}, "", timeout_s=3.0)
    sink = SliSink(Path(spool_dir), delivery, retry_after_s=0.5).start()
    already = sink.stats().queued
    sink.offer(stream(name), rows(range(int(first), int(first) + int(count))))
    poll(sink.stats, lambda s: s.queued >= already + int(count), 60, "the rows spooled", interval_s=0.05)
    Path(ready).touch()
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
