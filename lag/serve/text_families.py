"""The lag evaluator's group and partition families as exposition text, written straight from the arrays of
`scrape.py` (pure: strings from numpy arrays). An object per sample, as client_python's families need, costs more
than the evaluation itself at a million group-partitions; here a sample line is three or four shared strings and
its value's text, joined once per piece of about a megabyte, which the listener sends before the next is made.

Each family's `Template` is cut from client_python's own rendering of a one-sample family in the negotiated format
(`templates`, once per encoder), so headers, label names and their order are that encoder's; label values are
escaped and sample values printed exactly as it does (`floatToGoString`: `1.0`, `1.5e+06`, `+Inf`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from prometheus_client.core import GaugeMetricFamily

from lag.evaluate.columnar.block import I64, unique_ints
from lag.evaluate.columnar.timelag import F64
from lag.protocol import ClusterRows
from pulse.http.exposition import Encoder, encode_families

GROUP = ("cluster", "consumer_group")
PARTITION = ("cluster", "consumer_group", "topic", "partition")
KLE_GROUP = ("cluster_name", "group")
KLE_PARTITION = ("cluster_name", "group", "topic", "partition")
_SMALL = 1 << 16
BLOCK_LINES = 8192
"""Sample lines per piece of text: about 1 MB at the lag families' line lengths."""
_EXACT = 2**53
_MARK = re.compile("\0([0-9])\0")


@dataclass(frozen=True, slots=True)
class Family:
    """One family: its name, HELP text and labels (cluster, group[, topic, partition] in that role order), and which
    rows it has with which value (`None` as mask: every row)."""

    name: str
    documentation: str
    labels: tuple[str, ...]
    rows: Callable[[ClusterRows], tuple[I64 | F64, NDArray[np.bool_] | None]]

    @property
    def per_partition(self) -> bool:
        return len(self.labels) == 4


def _known(values: F64) -> tuple[F64, NDArray[np.bool_]]:
    return values, ~np.isnan(values)


FAMILIES: tuple[Family, ...] = (
    Family("burrow_kafka_consumer_lag_total", "Sum of partition lags.", GROUP, lambda r: (r.totallag, None)),
    Family(
        "burrow_kafka_consumer_status",
        "Group status: 0 NOTFOUND 1 OK 2 WARN 3 ERR (-1 unknown).",
        GROUP,
        lambda r: (r.status, None),
    ),
    Family(
        "burrow_kafka_topic_partition_status",
        "Partition status: 1 OK 2 WARN 4 STOP 5 STALL 6 REWIND.",
        PARTITION,
        lambda r: (r.part_status, r.full),  # Burrow sets it only for complete windows
    ),
    Family(
        "burrow_kafka_consumer_partition_lag", "Current lag in records.", PARTITION, lambda r: (r.current_lag, None)
    ),
    Family(
        "burrow_kafka_consumer_current_offset",
        "Last committed offset.",
        PARTITION,
        lambda r: (r.last_offset, r.has_commit),
    ),
    Family("kafka_consumergroup_group_lag", "Lag in records.", KLE_PARTITION, lambda r: (r.current_lag, None)),
    Family(
        "kafka_consumergroup_group_lag_seconds",
        "Lag in seconds (interpolated).",
        KLE_PARTITION,
        lambda r: _known(r.part_lag_seconds),
    ),
    Family("kafka_consumergroup_group_max_lag", "Largest partition lag.", KLE_GROUP, lambda r: (r.maxlag, None)),
    Family(
        "kafka_consumergroup_group_max_lag_seconds",
        "Largest lag in seconds.",
        KLE_GROUP,
        lambda r: _known(r.lag_seconds),
    ),
    Family("kafka_consumergroup_group_sum_lag", "Sum of lags.", KLE_GROUP, lambda r: (r.totallag, None)),
    Family(
        "kafka_pulse_lag_exact_seconds",
        "Age of the record at the committed offset.",
        PARTITION,
        lambda r: _known(r.part_exact_seconds),
    ),
    Family(
        "kafka_pulse_lag_max_exact_seconds",
        "Largest exact partition lag of the group.",
        GROUP,
        lambda r: _known(r.exact_seconds),
    ),
    Family(
        "kafka_pulse_lag_beyond_page_cache",
        "1 when the partition's lag reaches older data than its leader's page cache holds.",
        PARTITION,
        lambda r: _known(r.beyond_page_cache),
    ),
)


@dataclass(frozen=True, slots=True)
class Template:
    """A family's text in one format: `header` (HELP and TYPE lines), then per sample `head` + cluster + `middle` +
    group + `after_group` [+ partition + `after_partition` + topic + `after_topic`] + value + newline."""

    header: str
    head: str
    middle: str
    after_group: str
    after_partition: str = ""
    after_topic: str = ""


@cache
def templates(encoder: Encoder) -> tuple[Template, ...]:
    """`FAMILIES`' templates in `encoder`'s format, cut once per encoder (the format never changes in a process)."""
    return tuple(template(encoder, f) for f in FAMILIES)


def template(encoder: Encoder, family: Family) -> Template:
    """Cut from the encoder's rendering of the family with one sample whose label values are markers."""
    metric = GaugeMetricFamily(family.name, family.documentation, labels=family.labels)
    metric.add_metric([f"\0{i}\0" for i in range(len(family.labels))], 0.0)
    *header, line = encode_families(encoder, [metric]).decode().splitlines(keepends=True)
    if not line.endswith(" 0.0\n"):
        raise ValueError(f"{family.name}: unexpected sample line {line!r}")
    pieces = _MARK.split(line[: -len("0.0\n")])
    order = [int(i) for i in pieces[1::2]]
    texts = pieces[0::2]
    roles = [0, 1, 3, 2] if family.per_partition else [0, 1]  # labels sorted by name: partition before topic
    if order != roles:
        raise ValueError(f"{family.name}: labels in order {order}, expected {roles}")
    return Template("".join(header), *texts)


def escape(value: str) -> str:
    """A label value as both text formats write it."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def escape_all(values: list[str]) -> list[str]:
    """`escape` of each; one scan of them all when none needs it (group names rarely do)."""
    joined = "".join(values)
    if "\\" not in joined and "\n" not in joined and '"' not in joined:
        return values
    return [escape(v) for v in values]


def render(
    rows: Sequence[ClusterRows], templates: Sequence[Template], granularity: Literal["partition", "group"]
) -> Iterator[bytes]:
    """`FAMILIES` in order (`templates` alike), per-partition ones without samples unless `granularity` is partition,
    as UTF-8 text in pieces of about `BLOCK_LINES` sample lines (their concatenation is the exposition).

    A sample line is its family's head, then label pieces shared by many lines (the group's, written once per
    group; the topic-partition's, once per topic-partition), then its value: no string is made per line but the
    value's, and one join per piece writes the text. A piece's strings are dropped once it is sent, so memory
    holds one piece at a time, whatever the number of series."""
    names = [escape_all(r.names) for r in rows]
    labels: dict[tuple[str, ...], list[tuple[NDArray[np.object_], ...]]] = {}
    pending: list[str] = []
    """Headers waiting for the next piece."""
    for family, t in zip(FAMILIES, templates, strict=True):
        pending.append(t.header)
        if family.per_partition and granularity != "partition":
            continue
        key = (t.after_group, t.after_partition, t.after_topic) if family.per_partition else (t.after_group,)
        if key not in labels:
            labels[key] = [
                _partition_labels(r, n, t) if family.per_partition else (_group_labels(n, t),)
                for r, n in zip(rows, names, strict=True)
            ]
        for r, columns in zip(rows, labels[key], strict=True):
            values, mask = family.rows(r)
            picked = None if mask is None else np.flatnonzero(mask)
            head = t.head + escape(r.cluster) + t.middle
            total = len(values) if picked is None else len(picked)
            for lo in range(0, total, BLOCK_LINES):
                which = slice(lo, lo + BLOCK_LINES) if picked is None else picked[lo : lo + BLOCK_LINES]
                lines = _lines(head, [c[which] for c in columns], values[which])
                yield "".join(pending + lines).encode() if pending else "".join(lines).encode()
                pending = []
    if pending:
        yield "".join(pending).encode()


def _lines(head: str, labels: list[NDArray[np.object_]], values: I64 | F64) -> list[str]:
    """The pieces of one sample line per row, in order: head, label pieces, value text (with its newline)."""
    k, n = len(labels) + 2, len(values)
    out = [head] * (k * n)
    for j, column in enumerate(labels, 1):
        out[j::k] = column.tolist()
    out[k - 1 :: k] = _texts(values)
    return out


def _group_labels(names: list[str], t: Template) -> NDArray[np.object_]:
    labels = np.empty(len(names), dtype=object)
    labels[:] = [name + t.after_group for name in names]
    return labels


def _partition_labels(r: ClusterRows, names: list[str], t: Template) -> tuple[NDArray[np.object_], ...]:
    """The label pieces of every partition row: the group's (its text repeated over its partitions, the same
    object) and the topic-partition's (the text of each distinct one, written once)."""
    if not len(r.partitions):
        return np.zeros(0, dtype=object), np.zeros(0, dtype=object)
    width = int(r.partitions.max()) + 1
    distinct, inverse = unique_ints(r.topic_ids * width + r.partitions)
    topics = {tid: escape(name) for tid, name in r.topic_names.items()}
    texts = np.empty(len(distinct), dtype=object)
    texts[:] = [
        f"{p}{t.after_partition}{topics[tid]}{t.after_topic}"
        for tid, p in (divmod(k, width) for k in distinct.tolist())
    ]
    return np.repeat(_group_labels(names, t), np.diff(r.starts)), texts[inverse]


# -- sample values, as client_python's floatToGoString prints float(value) -------------------------------------------


def go_float(value: float) -> str:
    """floatToGoString: Python's repr, but Go's exponent form from 1e6 on (`1.5e+06`) and `+Inf`/`-Inf`/`NaN`."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    s = repr(value)
    dot = s.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


@cache
def _small_ints() -> NDArray[np.object_]:
    return np.array([f"{i}.0\n" for i in range(_SMALL)], dtype=object)


def _texts(values: I64 | F64) -> list[str]:
    if values.dtype == np.float64:
        return float_texts(values.astype(np.float64, copy=False))
    return int_texts(values.astype(np.int64, copy=False))


def _bulk(pattern: str, columns: Sequence[I64 | F64]) -> list[str]:
    """`pattern % row` for every row of the columns, formatted in one call (each ends with a newline)."""
    n = len(columns[0])
    if not n:
        return []
    args = np.stack(columns, axis=1).ravel().tolist() if len(columns) > 1 else columns[0].tolist()
    return ((pattern + "\0") * n % tuple(args)).split("\0")[:-1]


def int_texts(values: I64) -> list[str]:
    """Each integer as `floatToGoString(float(value))` plus a newline."""
    if len(values) and values.min() >= 0 and values.max() < _SMALL:  # statuses and most lags: the texts are shared
        shared: list[str] = _small_ints()[values].tolist()
        return shared
    out = np.empty(len(values), dtype=object)
    small = (values >= 0) & (values < _SMALL)
    out[small] = _small_ints()[values[small]]
    plain = ~small & (values > -(10**15)) & (values < 10**6)  # repr of the float: the integer and ".0"
    out[plain] = _bulk("%d.0\n", [values[plain]])
    big = (values >= 10**6) & (values < _EXACT)  # Go's exponent form: 1234000 -> 1.234e+06
    if big.any():
        v = values[big]
        digits = np.searchsorted(10 ** np.arange(19, dtype=np.int64), v, side="right")
        zeros = np.zeros(len(v), dtype=np.int64)
        for k in range(1, 17):  # k trailing zeros imply k - 1: stop at the first k none has
            has = v % 10**k == 0
            if not has.any():
                break
            zeros += has
        kept = digits - zeros
        q = v // 10**zeros
        one = kept == 1
        texts = np.empty(len(v), dtype=object)
        texts[one] = _bulk("%de+%02d\n", [q[one], digits[one] - 1])
        many = ~one
        scale = 10 ** (kept[many] - 1)
        texts[many] = _bulk("%d.%0*de+%02d\n", [q[many] // scale, kept[many] - 1, q[many] % scale, digits[many] - 1])
        out[big] = texts
    rest = ~(small | plain | big)
    out[rest] = [go_float(float(v)) + "\n" for v in values[rest].tolist()]
    texts_list: list[str] = out.tolist()
    return texts_list


def float_texts(values: F64) -> list[str]:
    """Each float as `floatToGoString` plus a newline."""
    out = np.empty(len(values), dtype=object)
    out[:] = _bulk("%r\n", [values])
    odd = ~np.isfinite(values) | (values >= 1e6)
    out[odd] = [go_float(v) + "\n" for v in values[odd].tolist()]
    texts: list[str] = out.tolist()
    return texts
