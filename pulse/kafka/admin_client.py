"""kafka-python's admin client, for the calls librdkafka lacks (ELR, the KRaft quorum, earliest-local offsets,
share and streams groups): one warning filter for its import, one way to open it from a profile's settings, one
client kept across a poller's reads, and the coordinator lookup the group readers share. kafka-python is imported
on use, never with this module.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

SCHEMA_LOADER_WARNING = r"\w+ is deprecated\. Use files\(\) instead"
"""kafka-python loads its protocol schemas with importlib.resources.read_text and open_text, deprecated in 3.11."""


@contextmanager
def kafka_python_warnings() -> Iterator[None]:
    """Around importing kafka-python and building its requests: its schema loader's DeprecationWarning (only that
    one) is ignored, which under `-W error` (our test suite) would raise. Filters a caller adds inside are undone
    on exit too."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", SCHEMA_LOADER_WARNING, DeprecationWarning)
        yield


def open_admin_client(settings: Mapping[str, Any]) -> Any:
    """A KafkaAdminClient for `settings` (pulse.profile.kafka_python_config), its bootstrap bounded by the request
    timeout; raises kafka-python's KafkaError when no broker answers. Call it inside `kafka_python_warnings`."""
    from kafka import KafkaAdminClient

    return KafkaAdminClient(**{**settings, "bootstrap_timeout_ms": settings.get("request_timeout_ms")})


def close_now(close: Callable[[], None]) -> None:
    """The default way a one-read function runs its client's close: at once, on the caller's thread."""
    close()


class KeptAdminClient:
    """One admin client kept across reads: a client closed while its network thread still builds a connection
    leaves that socket to the garbage collector (kafka-python 3.0.12), so a poller opens one and closes it once, at
    stop, rather than once a read. Creating this connects to nothing; the first `get` does."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        """`settings`: pulse.profile.kafka_python_config, whose request timeout bounds each exchange."""
        self.settings = dict(settings)
        self._client: Any = None

    def get(self) -> Any:
        """The client, opened on first use (`open_admin_client`, so it raises as that does, and a later call tries
        again)."""
        if self._client is None:
            self._client = open_admin_client(self.settings)
        return self._client

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


async def by_coordinator(client: Any, groups: list[str]) -> list[tuple[int, list[str]]]:
    """`groups` by the node that coordinates each (FindCoordinator GROUP: share and streams groups live on the
    group coordinator), in node order; runs on the client's network loop."""
    found: dict[int, list[str]] = defaultdict(list)
    for group, node in (await client._find_coordinator_ids(groups)).items():
        found[node].append(group)
    return sorted(found.items())
