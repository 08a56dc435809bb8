"""Probe record format: round trip, and a clear refusal of anything else found on the monitor topic."""

import sys
from collections.abc import Iterator

import pytest

from pulse.kafka.probe_payload import MAX_VALUE_BYTES, MalformedProbe, Probe, decode, encode


def test_round_trip_and_key_is_the_producer_id() -> None:
    probe = Probe("3f2a", partition=4, sequence=17, sent_ns=1_700_000_000_123_456_789)
    key, value = encode(probe)
    assert key == b"3f2a"
    assert decode(value) == probe


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (None, "record has no value"),
        (b"\xff\xfe", "value is not JSON"),
        (b"[1, 2]", "value is a JSON list, not an object"),
        (b'{"v": 2}', "format version 2, expected 1"),
        (b'{"v": 1, "id": "a", "p": 0, "seq": 1}', "field 'ts_ns' is missing"),
        (b'{"v": 1, "id": "a", "p": "0", "seq": 1, "ts_ns": 5}', "id must be a string and p, seq, ts_ns integers"),
        (b"[" * 100_000, "value is 100000 bytes, larger than a probe (1024 at most)"),
        (b" " * 1025, "value is 1025 bytes, larger than a probe (1024 at most)"),
        (b'{"v": "' + b"x" * 900 + b'"}', "format version 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx, expected 1"),
    ],
)
def test_malformed_values_say_why(value: bytes | None, why: str) -> None:
    with pytest.raises(MalformedProbe) as excinfo:
        decode(value)
    assert str(excinfo.value).startswith(why)


def test_a_probe_fits_the_bound_with_room_to_spare() -> None:
    """The bound refuses only what is not ours: the largest probe we can send is far below it."""
    _, value = encode(Probe("f" * 32, partition=2**31 - 1, sequence=2**63 - 1, sent_ns=2**63 - 1))
    assert len(value) * 4 < MAX_VALUE_BYTES


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default limit, whatever an earlier test in this process left (a Spark test leaves 3,000)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("default_recursion_limit")
def test_json_nested_past_the_recursion_limit_says_so() -> None:
    with pytest.raises(MalformedProbe, match=r"^value is not decodable: RecursionError"):
        decode(b"[" * 1020)
