"""JMX readings -> Prometheus metric families under the names jmx_exporter with Strimzi's Kafka rules gives (pure).

Sits between `transport.py` (which reads) and `collector.py` (which exposes). The rules, first match wins, after
Strimzi's `kafka-metrics.yaml` and jmx_exporter 1.x (research §2.5):

1. Yammer `Value` -> gauge `kafka_<domain>_<type>_<name>`; a `...Percent` name -> `kafka_<d>_<t>_<n>_percent`.
2. Yammer `MeanRate` of a `...Percent` meter (request handler idle) -> the same `_percent` gauge.
3. Yammer `Count` of a `...PerSec` meter -> counter `kafka_<d>_<t>_<n without PerSec>_total`; of any other
   histogram or timer -> counter `kafka_<d>_<t>_<n>_count` (exposed `_count_total`, as jmx_exporter 1.x does).
4. Yammer `<N>thPercentile` -> gauge `kafka_<d>_<t>_<n>{quantile="0.<N>"}`.
5. Kafka-metrics beans (`type=raft-metrics`, `broker-metadata-metrics`): `kafka_<d>_<type without '-'>_<attr>`;
   `*-total` attributes are counters, the rest gauges; raft `current-state` -> `..._current_state{current_state}` 1.
6. JVM beans -> jmx_exporter's built-in JVM names (`jvm_gc_collection_seconds`, `jvm_memory_used_bytes`, ...).

Other key properties of the bean become labels (`request`, `clientId`, `topic`, ...); every sample also carries
`cluster`, `broker` and `rack`. Names are lower-cased; other characters Prometheus forbids become `_`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from collectors.catalogue import NO_TOPICS, Reading, TopicSelection

Kind = Literal["gauge", "counter", "summary"]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_:]")
_UNDERSCORES = re.compile(r"__+")
_PERCENTILE = re.compile(r"(\d+)thPercentile")
_PERCENT = re.compile(r"(.+)Percent\w*")
_PER_SEC = re.compile(r"(.+)PerSec\w*")
_MEMORY_AREAS = {"HeapMemoryUsage": "heap", "NonHeapMemoryUsage": "nonheap"}
_MEMORY_KEYS = ("used", "committed", "max", "init")


@dataclass(frozen=True)
class BrokerIdentity:
    """The labels that say where a sample comes from."""

    cluster: str
    broker: int
    rack: str | None
    """`broker.rack`; exported as the empty string when the broker has none."""

    def labels(self) -> tuple[tuple[str, str], ...]:
        return (("cluster", self.cluster), ("broker", str(self.broker)), ("rack", self.rack or ""))


@dataclass(frozen=True)
class Sample:
    """One exposed line: `<family name><suffix>{labels} value`."""

    suffix: str
    """"" for gauges and quantiles, "_total" for counters, "_count"/"_sum" for summaries."""
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass
class Family:
    """One metric family; `collector.py` turns it into a prometheus_client Metric."""

    name: str
    kind: Kind
    help: str
    samples: list[Sample] = field(default_factory=list)


@dataclass(frozen=True)
class _Point:
    name: str
    kind: Kind
    suffix: str
    labels: tuple[tuple[str, str], ...]
    value: float
    help: str


def safe_name(text: str) -> str:
    """jmx_exporter's name sanitising: forbidden characters to `_`, runs of `_` collapsed."""
    return _UNDERSCORES.sub("_", _UNSAFE.sub("_", text))


def parse_object_name(bean: str) -> tuple[str, list[tuple[str, str]]]:
    """`domain:k1=v1,k2="v,2"` -> (domain, [(k1, v1), (k2, 'v,2')]), keys in registration order, quotes undone."""
    domain, _, rest = bean.partition(":")
    props: list[tuple[str, str]] = []
    i = 0
    while i < len(rest):
        eq = rest.index("=", i)
        key = rest[i:eq]
        i = eq + 1
        if i < len(rest) and rest[i] == '"':
            # A quoted value (ObjectName.quote): backslash escapes \" \\ \n \* \?; commas inside are data.
            chars: list[str] = []
            i += 1
            while rest[i] != '"':
                if rest[i] == "\\":
                    i += 1
                    chars.append("\n" if rest[i] == "n" else rest[i])
                else:
                    chars.append(rest[i])
                i += 1
            value = "".join(chars)
            i += 1
        else:
            end = rest.find(",", i)
            end = len(rest) if end < 0 else end
            value = rest[i:end]
            i = end
        props.append((key, value))
        if i < len(rest) and rest[i] == ",":
            i += 1
    return domain, props


def _as_number(value: float | str) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _labels(props: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((safe_name(k), v) for k, v in props)


def _jvm_point(props: dict[str, str], reading: Reading, number: float) -> _Point | None:
    kind, attribute = props.get("type"), reading.attribute
    source = f"JMX java.lang:type={kind} {attribute}"
    if kind == "GarbageCollector":
        labels = (("gc", props.get("name", "")),)
        if attribute == "CollectionCount":
            return _Point("jvm_gc_collection_seconds", "summary", "_count", labels, number, source)
        if attribute == "CollectionTime":  # milliseconds
            return _Point("jvm_gc_collection_seconds", "summary", "_sum", labels, number / 1000, source)
    if kind == "Memory" and attribute in _MEMORY_AREAS and reading.key in _MEMORY_KEYS:
        labels = (("area", _MEMORY_AREAS[attribute]),)
        return _Point(f"jvm_memory_{reading.key}_bytes", "gauge", "", labels, number, source)
    if kind == "OperatingSystem":
        if attribute == "OpenFileDescriptorCount":
            return _Point("process_open_fds", "gauge", "", (), number, source)
        if attribute == "MaxFileDescriptorCount":
            return _Point("process_max_fds", "gauge", "", (), number, source)
        if attribute == "ProcessCpuTime":  # nanoseconds
            return _Point("process_cpu_seconds", "counter", "_total", (), number / 1e9, source)
    if kind == "Threading" and attribute == "ThreadCount":
        return _Point("jvm_threads_current", "gauge", "", (), number, source)
    return None


def _kafka_metrics_point(domain: str, props: list[tuple[str, str]], reading: Reading) -> _Point | None:
    """Rule 5: beans of Kafka's own metrics library, one attribute per metric."""
    prefix = safe_name(f"{domain.replace('.', '_')}_{props[0][1].replace('-', '')}").lower()
    name = f"{prefix}_{safe_name(reading.attribute.replace('-', '_')).lower()}"
    labels = _labels(props[1:])
    source = f"JMX {domain}:type={props[0][1]} {reading.attribute}"
    if reading.attribute == "current-state" and isinstance(reading.value, str):
        return _Point(name, "gauge", "", (*labels, ("current_state", reading.value)), 1.0, source)
    number = _as_number(reading.value)
    if number is None:
        return None
    if reading.attribute.endswith("-total"):
        return _Point(name.removesuffix("_total"), "counter", "_total", labels, number, source)
    return _Point(name, "gauge", "", labels, number, source)


def _yammer_point(domain: str, props: list[tuple[str, str]], attribute: str, number: float) -> _Point | None:
    """Rules 1-4: Yammer gauges, meters, histograms and timers (`type=T,name=N[,more keys]`)."""
    bean_type, bean_name = props[0][1], props[1][1]
    base = f"{domain.replace('.', '_')}_{bean_type}"
    labels = _labels(props[2:])
    source = f"JMX {domain}:type={bean_type},name={bean_name} {attribute}"

    def named(stem: str) -> str:
        return safe_name(f"{base}_{stem}").lower()

    percent = _PERCENT.fullmatch(bean_name)
    if attribute == "Value":
        name = named(f"{percent.group(1)}_percent") if percent else named(bean_name)
        return _Point(name, "gauge", "", labels, number, source)
    if attribute == "MeanRate" and percent:
        return _Point(named(f"{percent.group(1)}_percent"), "gauge", "", labels, number, source)
    if attribute == "Count":
        per_sec = _PER_SEC.fullmatch(bean_name)
        stem = per_sec.group(1) if per_sec else f"{bean_name}_count"
        return _Point(named(stem), "counter", "_total", labels, number, source)
    quantile = _PERCENTILE.fullmatch(attribute)
    if quantile:
        labels = (*labels, ("quantile", f"0.{quantile.group(1)}"))
        return _Point(named(bean_name), "gauge", "", labels, number, source.rsplit(" ", 1)[0] + " percentiles")
    return None


def point_for(reading: Reading) -> _Point | None:
    """The sample a reading becomes under the rules above, or None when no rule exports it."""
    domain, props = parse_object_name(reading.bean)
    number = _as_number(reading.value)
    if domain == "java.lang":
        return _jvm_point(dict(props), reading, number) if number is not None else None
    if not domain.startswith("kafka") or not props or props[0][0] != "type":
        return None
    if len(props) >= 2 and props[1][0] == "name":
        return _yammer_point(domain, props, reading.attribute, number) if number is not None else None
    return _kafka_metrics_point(domain, props, reading)


def is_selected(labels: Iterable[tuple[str, str]], selection: TopicSelection) -> bool:
    """Whether a sample passes the topic allow/deny regexes (samples without a `topic` label always pass)."""
    topic = dict(labels).get("topic")
    if topic is None:
        return True
    if not re.search(selection.allow, topic):
        return False
    return selection.deny is None or not re.search(selection.deny, topic)


def map_readings(
    readings: Iterable[Reading], identity: BrokerIdentity, selection: TopicSelection = NO_TOPICS
) -> dict[str, Family]:
    """The families one broker's readings make, by name. Unnamed readings and non-numbers are dropped; a name
    reused with another kind keeps its first kind (the later readings are dropped, never mislabelled)."""
    families: dict[str, Family] = {}
    for reading in readings:
        point = point_for(reading)
        if point is None or not is_selected(point.labels, selection):
            continue
        family = families.setdefault(point.name, Family(point.name, point.kind, point.help))
        if family.kind != point.kind:
            continue
        family.samples.append(Sample(point.suffix, (*point.labels, *identity.labels()), point.value))
    return families


def merge_families(parts: Iterable[dict[str, Family]]) -> dict[str, Family]:
    """One family per name across brokers (Prometheus refuses a family name twice in one exposition)."""
    merged: dict[str, Family] = {}
    for part in parts:
        for name, family in part.items():
            into = merged.setdefault(name, Family(name, family.kind, family.help))
            if into.kind == family.kind:
                into.samples.extend(family.samples)
    return merged
