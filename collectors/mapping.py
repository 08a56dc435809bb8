"""JMX readings -> Prometheus metric families under the names jmx_exporter with Strimzi's Kafka rules gives (pure).

Sits between `transport.py` (which reads) and `collector.py` (which exposes). The rules, first match wins, after
Strimzi's `kafka-metrics.yaml` and jmx_exporter 1.x:

1. Yammer `Value` -> gauge `kafka_<domain>_<type>_<name>`; a `...Percent` name -> `kafka_<d>_<t>_<n>_percent`.
2. Yammer `MeanRate` of a `...Percent` meter (request handler idle) -> the same `_percent` gauge.
3. Yammer `Count` of a `...PerSec` meter -> counter `kafka_<d>_<t>_<n without PerSec>_total`; of any other
   histogram or timer -> counter `kafka_<d>_<t>_<n>_count` (exposed `_count_total`, as jmx_exporter 1.x does).
4. Yammer `<N>thPercentile` -> gauge `kafka_<d>_<t>_<n>{quantile="0.<N>"}`; `Mean` of a histogram or timer (sum /
   count since start, not the decaying reservoir's) -> gauge `kafka_<d>_<t>_<n>_mean`.
5. Kafka-metrics beans (`type=raft-metrics`, `broker-metadata-metrics`): `kafka_<d>_<type without '-'>_<attr>`;
   `*-total` attributes are counters, the rest gauges; raft `current-state` -> `..._current_state{current_state}` 1.
6. JVM beans -> jmx_exporter's built-in JVM names (`jvm_gc_collection_seconds`, `jvm_memory_used_bytes`, ...).

Client beans (a producer's, consumer's or MirrorMaker 2's JVM), after Strimzi's Connect/MirrorMaker 2 rules
(`kafka-mirror-maker-2-metrics.yaml`, which also sets `lowercaseOutputLabelNames`):

7. `kafka.<client>:type=<group>-metrics,client-id=C[,...]` -> `kafka_<group>_<attr>{clientid=C}`
   (`kafka_producer_record_error_rate`, `kafka_consumer_fetch_manager_records_lag_max`); `*-total` attributes are
   counters, the rest gauges. Strimzi's rules list which suffixes they keep; we name every attribute the catalogue
   asks for by the same rule, so `-rate`, `-max` and `assigned-partitions` get the names those rules would give.
8. `kafka.connect.mirror:type=<Connector>,k=v...` -> gauge `kafka_connect_mirror_<connector>_<attr>{k=v...}`
   (`kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max{target,topic,partition}`).

Other key properties of the bean become labels (`request`, `clientId`, `topic`, ...); every sample also carries
its origin's labels: `cluster`, `broker` and `rack` for a broker, `client_target` (and `cluster` when configured)
for a client. Names are lower-cased; other characters Prometheus forbids become `_`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from collectors.catalogue import NO_TOPICS, Reading, TopicSelection

Kind = Literal["gauge", "counter", "summary"]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_:]")
_UNDERSCORES = re.compile(r"__+")
_PERCENTILE = re.compile(r"(\d+)thPercentile")
_PERCENT = re.compile(r"(.+)Percent\w*")
_PER_SEC = re.compile(r"(.+)PerSec\w*")
_MEMORY_AREAS = {"HeapMemoryUsage": "heap", "NonHeapMemoryUsage": "nonheap"}
_MEMORY_KEYS = ("used", "committed", "max", "init")


class Origin(Protocol):
    """Where one scrape's samples come from: the labels they all carry, and a name for logs and errors."""

    def labels(self) -> tuple[tuple[str, str], ...]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class BrokerIdentity:
    """The labels that say which broker a sample comes from."""

    cluster: str
    broker: int
    rack: str | None
    """`broker.rack`; exported as the empty string when the broker has none."""

    def labels(self) -> tuple[tuple[str, str], ...]:
        return (("cluster", self.cluster), ("broker", str(self.broker)), ("rack", self.rack or ""))

    def describe(self) -> str:
        return f"cluster {self.cluster} broker {self.broker}"


@dataclass(frozen=True)
class ClientIdentity:
    """The labels that say which client target (a JVM the operator listed in `collectors.clients`) a sample is from."""

    target: str
    """The target's configured name, exported as `client_target`."""
    cluster: str | None = None
    """The Kafka cluster the client talks to, when configured; no `cluster` label otherwise."""

    def labels(self) -> tuple[tuple[str, str], ...]:
        own = (("client_target", self.target),)
        return own if self.cluster is None else (*own, ("cluster", self.cluster))

    def describe(self) -> str:
        return f"client target {self.target}"


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
    if attribute == "OneMinuteRate" and percent:  # the recent idle share; MeanRate averages since start
        return _Point(named(f"{percent.group(1)}_one_minute_percent"), "gauge", "", labels, number, source)
    if attribute == "Count":
        per_sec = _PER_SEC.fullmatch(bean_name)
        stem = per_sec.group(1) if per_sec else f"{bean_name}_count"
        return _Point(named(stem), "counter", "_total", labels, number, source)
    if attribute == "Mean":
        return _Point(named(f"{bean_name}_mean"), "gauge", "", labels, number, source)
    quantile = _PERCENTILE.fullmatch(attribute)
    if quantile:
        labels = (*labels, ("quantile", f"0.{quantile.group(1)}"))
        return _Point(named(bean_name), "gauge", "", labels, number, source.rsplit(" ", 1)[0] + " percentiles")
    return None


def _client_label(key: str) -> str:
    """Strimzi's label for a client bean's key (`client-id` -> `clientId`), lower-cased as its rules file does."""
    return safe_name(key.replace("-", "")).lower()


def _client_point(domain: str, props: list[tuple[str, str]], reading: Reading, number: float) -> _Point:
    """Rule 7: a Kafka client's metrics-library bean, named without its domain, as Strimzi's rule does."""
    group = props[0][1].removesuffix("-metrics")
    name = safe_name(f"kafka_{group}_{reading.attribute}".replace("-", "_")).lower()
    labels = tuple((_client_label(k), v) for k, v in props[1:])
    source = f"JMX {domain}:type={props[0][1]} {reading.attribute}"
    if reading.attribute.endswith("-total"):
        return _Point(name.removesuffix("_total"), "counter", "_total", labels, number, source)
    return _Point(name, "gauge", "", labels, number, source)


def _mirror_point(domain: str, props: list[tuple[str, str]], reading: Reading, number: float) -> _Point:
    """Rule 8: MirrorMaker 2's connector metrics, every attribute a gauge (Strimzi types them all GAUGE)."""
    connector = props[0][1]
    name = safe_name(f"kafka_connect_mirror_{connector}_{reading.attribute}".replace("-", "_")).lower()
    labels = tuple((_client_label(k), v) for k, v in props[1:])
    return _Point(name, "gauge", "", labels, number, f"JMX {domain}:type={connector} {reading.attribute}")


def _is_client_bean(domain: str, props: list[tuple[str, str]]) -> bool:
    return (
        domain != "kafka.server" and props[0][1].endswith("-metrics") and len(props) >= 2 and props[1][0] == "client-id"
    )


def point_for(reading: Reading) -> _Point | None:
    """The sample a reading becomes under the rules above, or None when no rule exports it."""
    domain, props = parse_object_name(reading.bean)
    number = _as_number(reading.value)
    if domain == "java.lang":
        return _jvm_point(dict(props), reading, number) if number is not None else None
    if not domain.startswith("kafka") or not props or props[0][0] != "type":
        return None
    if domain == "kafka.connect.mirror":
        return _mirror_point(domain, props, reading, number) if number is not None else None
    if _is_client_bean(domain, props):
        return _client_point(domain, props, reading, number) if number is not None else None
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
    readings: Iterable[Reading], identity: Origin, selection: TopicSelection = NO_TOPICS
) -> dict[str, Family]:
    """The families one origin's readings (a broker's or a client's) make, by name. Unnamed readings and
    non-numbers are dropped; a name reused with another kind keeps its first kind (later readings are dropped)."""
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
