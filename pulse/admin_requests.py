"""Waiting on librdkafka Admin requests without tripping its native aborts (librdkafka 2.16), and DescribeCluster
without waiting on a dead controller.

Two patterns abort the whole process, both reproduced by tests/integration/app/test_check_lag_timeouts.py:
- a group-coordinator request (ListConsumerGroupOffsets, DescribeConsumerGroups) whose `request_timeout` runs out
  while it still waits for the coordinator: `rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0`;
- an AdminClient freed by the garbage collector on librdkafka's own thread, which a re-raised stored exception
  makes possible (future -> exception -> traceback -> frame -> client).
"""

import logging
import time
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

_LOG = logging.getLogger(__name__)

GROUP_REQUEST_TIMEOUT_S = 60.0
"""librdkafka's own timeout for group-coordinator requests: long, so it never runs out while the coordinator is
being looked up; callers bound only their own wait, with `await_result`."""


def await_result(future: Future[Any], timeout_s: float) -> Any:
    """An Admin future's result within `timeout_s` (TimeoutError otherwise); its error is raised as a new exception
    with the same arguments, so the stored one never ties the client into a cycle."""
    error = future.exception(timeout=timeout_s)
    if isinstance(error, KafkaException):
        raise KafkaException(*error.args)
    if error is not None:
        raise RuntimeError(f"{type(error).__name__}: {error}")
    return future.result(timeout=0)


CONTROLLER_ATTEMPT_S = 2.0
"""Longest wait of one DescribeCluster attempt: a live controller answers in milliseconds, so a longer wait means
the request is parked on a dead one."""
_MIN_ATTEMPT_S = 0.5


def describe_cluster(admin: AdminClient, timeout_s: float) -> Any:
    """DescribeCluster within `timeout_s`, in attempts of at most `CONTROLLER_ATTEMPT_S` with fresh metadata between.

    librdkafka sends it to the controller of the last metadata answer, which under KRaft is a random broker the
    quorum counts as live: for the seconds between a kill -9 and the broker's fencing, one answer in three (on 3
    brokers) names the dead one, and the request waits for it to the end of its timeout ("Failed while waiting for
    controller"). A new metadata answer picks again (tests/integration/pulse/test_admin_requests.py)."""
    end = time.monotonic() + timeout_s
    while True:
        left = end - time.monotonic()
        attempt_s = min(left, max(_MIN_ATTEMPT_S, min(CONTROLLER_ATTEMPT_S, left / 3)))
        try:
            return await_result(admin.describe_cluster(request_timeout=max(attempt_s, 0.001)), attempt_s)
        except (KafkaException, TimeoutError) as exc:
            if not _timed_out(exc) or end - time.monotonic() < 0.1:
                raise
            _LOG.debug("DescribeCluster got no answer in %.1f s; asking again after fresh metadata", attempt_s)
        admin.list_topics(timeout=max(end - time.monotonic(), 0.001))


def _timed_out(exc: BaseException) -> bool:
    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return isinstance(exc, TimeoutError) or (error is not None and error.code() == KafkaError._TIMED_OUT)
