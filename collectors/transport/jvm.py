"""The in-process JVM the JPype transport talks through: started once per process with RMI's time limits, and
never destroyed at exit (RMI's non-daemon threads would hold the interpreter)."""

from __future__ import annotations

import atexit
import logging
import threading

from collectors.transport.contract import JmxUnreachable
from collectors.transport.trust import ROUTER

_LOG = logging.getLogger(__name__)

_JVM_LOCK = threading.Lock()


def ensure_jvm(response_timeout_s: float) -> None:
    """Start the in-process JVM once per process. RMI's response timeout is fixed then, for every broker: it is
    what eventually frees a thread stuck on a paused broker after `read` has already given up on it."""
    import jpype

    with _JVM_LOCK:
        if not jpype.isJVMStarted():
            timeout_ms = str(int(response_timeout_s * 1000))
            try:
                _start_jvm(timeout_ms)
            except OSError as exc:  # the JVM of this process was shut down (interpreter exit): no restart
                raise JmxUnreachable(f"the in-process JVM is not available: {exc}") from exc


def _start_jvm(timeout_ms: str) -> None:
    import jpype
    import jpype.config

    # -Xrs and interrupt=False leave SIGINT/SIGTERM to Python, so `kafka-pulse collect` stops cleanly; and at
    # exit the JVM is not destroyed, which would wait for RMI's non-daemon threads and never return.
    jpype.config.destroy_jvm = False
    jpype.startJVM(
        "-Xrs",
        "-Xmx64m",
        "-XX:TieredStopAtLevel=1",
        f"-Dsun.rmi.transport.tcp.responseTimeout={timeout_ms}",
        f"-Dsun.rmi.transport.connectionTimeout={timeout_ms}",
        "-Djava.rmi.server.disableHttp=true",
        convertStrings=True,
        interrupt=False,
    )
    ROUTER.install()  # before any TLS socket: per-cluster trust for JMX over TLS (trust.py)
    atexit.register(_stop_reference_queue)  # runs before JPype's own exit hook (atexit is last-in, first-out)


def _stop_reference_queue() -> None:
    """Stop JPype's reference-queue thread at exit: `destroy_jvm = False` leaves it running, and its entry into
    Python after a Java GC aborts a finalizing interpreter ("PyGILState_Release: thread state ... must be current")."""
    import jpype

    if not jpype.isJVMStarted():
        return
    try:
        jpype.JClass("org.jpype.ref.JPypeReferenceQueue").getInstance().stop()
    except Exception:  # exiting anyway: leaving the thread running is the old behaviour, not a new failure
        _LOG.debug("could not stop JPype's reference queue at exit", exc_info=True)
