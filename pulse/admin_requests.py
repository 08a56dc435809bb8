"""Waiting on librdkafka Admin requests without tripping its native aborts (librdkafka 2.16).

Two patterns abort the whole process, both reproduced by tests/integration/test_check_lag_timeouts.py:
- a group-coordinator request (ListConsumerGroupOffsets, DescribeConsumerGroups) whose `request_timeout` runs out
  while it still waits for the coordinator: `rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0`;
- an AdminClient freed by the garbage collector on librdkafka's own thread, which a re-raised stored exception
  makes possible (future -> exception -> traceback -> frame -> client).
"""

from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaException

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
