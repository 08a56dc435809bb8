"""The probe record's bytes: who sent it, to which partition, which sequence and when (pure).

The key is the producer id, so a consumer can skip other canaries' records without decoding values; the value is
compact JSON so an operator can read a probe with any console consumer. Mirror mode decodes the same format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

FORMAT_VERSION = 1


class MalformedProbe(ValueError):
    """A record on the monitor topic that is not a probe of this format (counted and skipped by the consumer)."""


@dataclass(frozen=True)
class Probe:
    """What one probe record carries."""

    producer_id: str
    """The sending canary instance (a uuid4 hex per start), so instances can share one topic."""
    partition: int
    """The partition it was sent to; a mirrored copy may land elsewhere, so it travels in the payload."""
    sequence: int
    """Per-(producer, partition), from 0, one per probe whether or not its produce succeeds."""
    sent_ns: int
    """Producer wall clock (time.time_ns) at send; for latency across hosts, where no shared monotonic clock exists."""


def encode(probe: Probe) -> tuple[bytes, bytes]:
    """(key, value) of the record for `probe`."""
    value = {"v": FORMAT_VERSION, "id": probe.producer_id, "p": probe.partition, "seq": probe.sequence}
    value["ts_ns"] = probe.sent_ns
    return probe.producer_id.encode(), json.dumps(value, separators=(",", ":")).encode()


MAX_VALUE_BYTES = 1024
"""The largest record value decoded: a probe is under 150 bytes, and anything larger on the monitor topic is not
ours, so it is refused before the JSON parser (and its recursion) ever sees it."""


def decode(value: bytes | None) -> Probe:
    """The probe in a record's value; MalformedProbe says what is wrong with anything else. Any failure to decode
    (bad UTF-8, JSON nested past the recursion limit, anything) is MalformedProbe: the value is data from Kafka."""
    if value is None:
        raise MalformedProbe("record has no value")
    if len(value) > MAX_VALUE_BYTES:
        raise MalformedProbe(f"value is {len(value)} bytes, larger than a probe ({MAX_VALUE_BYTES} at most)")
    try:
        fields = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedProbe(f"value is not JSON: {exc}") from None
    except Exception as exc:  # RecursionError on deep nesting, MemoryError, whatever the parser meets
        raise MalformedProbe(f"value is not decodable: {type(exc).__name__}") from None
    if not isinstance(fields, dict):
        raise MalformedProbe(f"value is a JSON {type(fields).__name__}, not an object")
    if fields.get("v") != FORMAT_VERSION:
        raise MalformedProbe(f"format version {fields.get('v')!r:.40}, expected {FORMAT_VERSION}")
    try:
        producer_id, partition, sequence, sent_ns = fields["id"], fields["p"], fields["seq"], fields["ts_ns"]
    except KeyError as exc:
        raise MalformedProbe(f"field {exc.args[0]!r} is missing") from None
    if not isinstance(producer_id, str) or not all(isinstance(n, int) for n in (partition, sequence, sent_ns)):
        raise MalformedProbe("id must be a string and p, seq, ts_ns integers")
    return Probe(producer_id, partition, sequence, sent_ns)
