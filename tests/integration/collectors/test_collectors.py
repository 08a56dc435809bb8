"""Collectors against the real 3-node cluster: the catalogue, faults (kill -9, SIGSTOP), a real Prometheus, and
both JMX transports through the same tests."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from collectors.catalogue import BeanQuery, scrape_plan
from collectors.mapping import BrokerIdentity, Family, map_readings, merge_families
from collectors.scrapers import ScrapeResult
from collectors.service import CollectorService
from collectors.transport import (
    JmxqueryTransport,
    JmxTransport,
    JmxUnreachable,
    JpypeTransport,
    ensure_jvm,
    open_transport,
)
from devstack.prometheus import Prometheus, ScrapeTarget
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import ClusterConfig, CollectorsConfig, JmxBrokerConfig
from pulse.kafka.partitions import Scope
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.ports import free_ports
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.pulse_process import PulseProcesses
from tests.support.threads import librdkafka_cpu_s, names

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
Transport = Literal["jmxquery", "jpype"]
TRANSPORTS: list[Transport] = ["jmxquery", "jpype"]


def always_present_families() -> list[str]:
    """The broker and health families docs/metrics.md's Collectors section says exist on every 4.x broker."""
    text = (REPO / "docs" / "metrics.md").read_text()
    section = text.split("## Collectors", 1)[1].split("\n## ", 1)[0]
    names = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[4] == "always":
            names.append(re.findall(r"`([a-z_:0-9]+)`", cells[0])[0])
    assert len(names) > 100, "docs/metrics.md lost its Collectors tables"
    return names


def cluster_config(kafka: KafkaHandle, timeout_s: float) -> ClusterConfig:
    config = dev_cluster_config(kafka.cluster)
    assert config.jmx is not None
    return config.model_copy(update={"jmx": config.jmx.model_copy(update={"timeout_s": timeout_s})})


def scrape_all(kafka: KafkaHandle, transport: str) -> dict[str, Family]:
    config = cluster_config(kafka, 20)
    assert config.jmx is not None
    parts = []
    for broker in config.jmx.brokers:
        jmx = open_transport(transport, broker, config.jmx)
        try:
            parts.append(map_readings(jmx.read(scrape_plan()), BrokerIdentity("dev", broker.broker_id, None)))
        finally:
            jmx.close()
    return merge_families(parts)


def total(families: dict[str, Family], name: str) -> float:
    return sum(s.value for s in families[name].samples)


def produce(kafka: KafkaHandle, topic: str, count: int) -> None:
    producer = kafka.producer()
    for i in range(count):
        producer.produce(topic, value=b"x" * 100, key=str(i).encode())
    assert producer.flush(30) == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_catalogue_families_present_with_plausible_values(kafka: KafkaHandle, transport: str) -> None:
    topic = kafka.create_topic("collect", partitions=3, replication_factor=3)
    before = scrape_all(kafka, transport)
    exposed = {f.name + ("_total" if f.kind == "counter" else "") for f in before.values()}
    exposed |= {f.name + "_count" for f in before.values() if f.kind == "summary"}
    broker_families = [n for n in always_present_families() if not n.startswith("kafka_pulse_")]
    assert sorted(set(broker_families) - exposed) == []

    produce(kafka, topic, 200)
    after = scrape_all(kafka, transport)
    assert (
        total(after, "kafka_server_brokertopicmetrics_bytesin")
        >= total(before, "kafka_server_brokertopicmetrics_bytesin") + 200 * 100
    )
    assert total(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    partitions = sum(len(t.partitions) for t in kafka.admin().list_topics(timeout=10).topics.values())
    assert total(after, "kafka_server_replicamanager_leadercount") == partitions
    assert {dict(s.labels)["broker"] for s in after["kafka_server_kafkaserver_brokerstate"].samples} == {"1", "2", "3"}
    assert all(s.value == 3 for s in after["kafka_server_kafkaserver_brokerstate"].samples)  # RUNNING
    # KIP-853's leader-only raft-metrics come from the quorum leader (the active controller) alone, read as 0 there
    # (no voter change under way); the nodes without them are read all the same.
    active = {dict(s.labels)["broker"] for s in after["kafka_controller_kafkacontroller_activecontrollercount"].samples
              if s.value == 1}  # fmt: skip
    pending = after["kafka_server_raftmetrics_uncommitted_voter_change"].samples
    assert {dict(s.labels)["broker"]: s.value for s in pending} == {b: 0.0 for b in active}, pending
    ages = after["kafka_server_snapshotemitter_latestsnapshotgeneratedagems"].samples
    assert len(ages) == 3 and all(s.value > 0 for s in ages), ages


@pytest.fixture
def service_factory() -> Iterator[list[CollectorService]]:
    started: list[CollectorService] = []
    yield started
    for service in started:
        service.stop()


def start_service(
    kafka: KafkaHandle, transport: Transport, timeout_s: float, started: list[CollectorService]
) -> CollectorService:
    service = CollectorService(
        [cluster_config(kafka, timeout_s)], CollectorsConfig(transport=transport, scrape_interval_s=1)
    )
    started.append(service)
    service.start()
    for scraper in service.brokers.values():
        scraper.wait_for(lambda r: r.ok, 90)
    return service


def scrape_limit_s(transport: Transport) -> float:
    """A scrape's timeout in these tests: a jmxquery scrape forks a JVM, ~0.6 s on an idle box and more than 5 s at
    CI's load (both jmxquery cases timed out every scrape for 30 s at load 25 with a 4-5 s limit)."""
    return 15.0 if transport == "jmxquery" else 2.0


def test_kill9_survivors_report_urp_and_diagnosis_names_the_dead_broker(
    kafka: KafkaHandle, service_factory: list[CollectorService]
) -> None:
    """Both transports through one kill -9: a service of each scrapes side by side, so the cluster goes through one
    kill, restart and ISR recovery instead of one per transport."""
    kafka.create_topic("urp", partitions=3, replication_factor=3)
    services = {t: start_service(kafka, t, max(5.0, scrape_limit_s(t)), service_factory) for t in TRANSPORTS}
    victim = 3

    def survivors_urp(r: ScrapeResult[dict[str, Family]]) -> bool:
        urp = (r.value or {}).get("kafka_server_replicamanager_underreplicatedpartitions")
        return r.ok and urp is not None and sum(s.value for s in urp.samples) > 0

    kafka.cluster.kill(victim)
    try:
        for transport, service in services.items():
            state = service.states["dev"].wait_for(
                lambda r: r.ok and r.value is not None and r.value.diagnosis.scope is not Scope.NONE, 60
            )
            assert state.value is not None, transport
            assert state.value.diagnosis.scope is Scope.BROKER and state.value.diagnosis.brokers == (victim,), transport
            assert state.value.under_replicated > 0, transport
            down = service.brokers[("dev", victim)].wait_for(lambda r: not r.ok, 30)
            assert down.reason == "unreachable" or down.reason == "timeout", (transport, down)
            assert any(service.brokers[("dev", b)].wait_for(survivors_urp, 30).ok for b in (1, 2)), transport
    finally:
        kafka.cluster.restart(victim, cache_dir())
    for service in services.values():
        service.states["dev"].wait_for(lambda r: r.ok and r.value is not None and r.value.under_replicated == 0, 90)
        assert service.brokers[("dev", victim)].wait_for(lambda r: r.ok, 60).ok


SPIN_CORES = 0.3
"""The bound on collect's librdkafka threads after a kill -9, in cores: a spinning client burns about one (its broker
thread and rdk:main handing the reconnect to each other), clients waiting on a backoff a few thousandths."""


def finished_after(after_s: float) -> Callable[[ScrapeResult[Any]], bool]:
    return lambda result: result.finished_s > after_s


def ok_after(after_s: float) -> Callable[[ScrapeResult[Any]], bool]:
    return lambda result: result.ok and result.finished_s > after_s


def test_kill9_leaves_the_collect_clients_waiting_not_spinning(
    kafka: KafkaHandle, service_factory: list[CollectorService]
) -> None:
    """After kill -9 of a broker, collect's Admin clients (cluster state, slow-broker probes) reconnect to it on
    librdkafka's backoff: over five cluster-state reads, their threads use under 0.3 of a core. With on-demand
    connections, each request bound for the dead broker (every probe round, and every read while the metadata named
    it controller) made librdkafka reconnect in a loop, ~13,000 refused connects a second (pulse/profile.py
    `ADMIN_SETTINGS`): the host saturated and the cluster-state reads timed out for minutes."""
    kafka.create_topic("spin", partitions=3, replication_factor=3)
    others = set(librdkafka_cpu_s())  # the fixture's clients and any an earlier test left behind
    # JMX is configured (the slow-broker detector needs it) but not awaited: this test is about the Admin clients.
    service = CollectorService([cluster_config(kafka, 5)], CollectorsConfig(transport="jpype", scrape_interval_s=1))
    service_factory.append(service)
    service.start()  # returns after the first cluster-state read, with the slow-broker probes started
    assert service.states["dev"].wait_for(lambda r: r.ok, 30).ok
    victim = 3
    kafka.cluster.kill(victim)
    killed_s = time.time()
    try:
        before, started = librdkafka_cpu_s(), time.monotonic()
        state = service.states["dev"]
        last_s = killed_s
        for _ in range(5):  # the window: five reads, each with the slow-broker probes still asking the dead broker
            last_s = state.wait_for(finished_after(last_s), 60).finished_s
        after, elapsed = librdkafka_cpu_s(), time.monotonic() - started
        used = {tid: cpu - before.get(tid, 0.0) for tid, cpu in after.items() if tid not in others}
        assert used, "collect started no librdkafka client"
        hot = {f"{name}/{tid}": round(used[tid] / elapsed, 2) for tid, name in names(set(used)).items()}
        assert sum(used.values()) / elapsed < SPIN_CORES, (
            f"collect's librdkafka threads, cores over {elapsed:.0f} s: {hot}"
        )
    finally:
        kafka.cluster.restart(victim, cache_dir())
    service.states["dev"].wait_for(lambda r: r.ok and r.value is not None and r.value.under_replicated == 0, 90)


def test_sigstop_broker_times_out_while_others_are_scraped_on_time(
    kafka: KafkaHandle, service_factory: list[CollectorService]
) -> None:
    """Both transports through one SIGSTOP, a service of each side by side (one pause and resume of the cluster)."""
    services = {t: start_service(kafka, t, scrape_limit_s(t), service_factory) for t in TRANSPORTS}
    paused = 2
    kafka.cluster.pause(paused)
    paused_at = time.time()
    try:
        for transport, service in services.items():
            limit_s = scrape_limit_s(transport)
            hung = service.brokers[("dev", paused)].wait_for(lambda r: r.finished_s > paused_at and not r.ok, 60)
            assert hung.reason == "timeout", (transport, hung)
            assert hung.duration_s <= limit_s + 1.5, (transport, hung)  # cut at its limit, not left to the hung broker
            # The others are still scraped while it hangs (wait_for raises otherwise); how fast is bench/jmx_bench.py's.
            for other in (1, 3):
                service.brokers[("dev", other)].wait_for(ok_after(hung.finished_s), 60)
    finally:
        kafka.cluster.resume(paused)
    for service in services.values():
        assert service.brokers[("dev", paused)].wait_for(lambda r: r.ok, 60).ok


def test_prometheus_scrapes_collect_and_promql_finds_every_documented_family(
    kafka: KafkaHandle, prometheus: Prometheus, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["security"] = {"protocol": "PLAINTEXT"}
    config = {
        "clusters": [cluster],
        "collectors": {"transport": "jpype", "scrape_interval_s": 1},
    }
    collect = pulse_process.start("collect", config, home=tmp_path)
    port = collect.port
    try:
        job = "kafka-pulse-collect"
        with prometheus.extended(targets=[ScrapeTarget(job, (f"127.0.0.1:{port}",))]):
            prometheus.wait_for_target_up(job, timeout_s=60)
            wanted = always_present_families()

            def missing() -> list[str]:
                found = {r["metric"]["__name__"] for r in prometheus.query(f'count by (__name__) ({{job="{job}"}})')}
                return sorted(set(wanted) - found)

            poll(missing, lambda names: names == [], 60, "every always-present family in Prometheus", 0.5)
            # The families appear with the first broker scraped; the others' first JMX connect may still run
            # on a loaded host, so await all three up rather than reading the first scrape that has families.
            up = poll(
                lambda: prometheus.query(f'sum(kafka_pulse_jmx_up{{job="{job}"}})'),
                lambda result: float(result[0]["value"][1]) == 3,
                60,
                "kafka_pulse_jmx_up 3",
                0.5,
            )
            assert float(up[0]["value"][1]) == 3
            controllers = prometheus.query(
                f'sum(kafka_controller_kafkacontroller_activecontrollercount{{job="{job}"}})'
            )
            assert float(controllers[0]["value"][1]) == 1
    finally:
        returncode = collect.stop(grace_s=15)  # SIGTERM: collect shuts its listener and scrapers down
    assert returncode == 0, collect.log()[-3000:]


# --- a value with a quote and a backslash ---------------------------------------------------------------------------

QUOTED = 'he said "hi" \\ C:\\kafka'


@pytest.fixture(scope="module")
def quote_jmx_port() -> int:
    """A JMX endpoint in this process's own JVM (JPype) holding a JDK MBean whose String attribute has a quote and
    a backslash: the shape of value that breaks jmxquery's JSON (dgildeh/JMXQuery#23)."""
    import jpype

    ensure_jvm(20)
    System = jpype.JClass("java.lang.System")
    System.setProperty("java.rmi.server.hostname", "127.0.0.1")
    (port,) = free_ports(1)
    jpype.JClass("java.rmi.registry.LocateRegistry").createRegistry(port)
    server_mbeans = jpype.JClass("java.lang.management.ManagementFactory").getPlatformMBeanServer()
    monitor = jpype.JClass("javax.management.monitor.StringMonitor")()
    monitor.setStringToCompare(QUOTED)
    server_mbeans.registerMBean(monitor, jpype.JClass("javax.management.ObjectName")("kafka.pulse.test:type=Quote"))
    url = jpype.JClass("javax.management.remote.JMXServiceURL")(
        f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi"
    )
    factory = jpype.JClass("javax.management.remote.JMXConnectorServerFactory")
    factory.newJMXConnectorServer(url, None, server_mbeans).start()
    return port


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_quote_or_backslash_in_a_value_does_not_break_the_scrape(quote_jmx_port: int, transport: str) -> None:
    broker = JmxBrokerConfig(broker_id=1, port=quote_jmx_port)
    jmx: JmxTransport = JmxqueryTransport(broker, 20) if transport == "jmxquery" else JpypeTransport(broker, 20)
    queries = [
        BeanQuery("java.lang:type=Threading", ("ThreadCount",)),
        BeanQuery("kafka.pulse.test:type=Quote", ("StringToCompare",)),
        BeanQuery("java.lang:type=Memory", ("HeapMemoryUsage",)),
    ]
    try:
        readings = jmx.read(queries)
    finally:
        jmx.close()
    attributes = {(r.bean, r.attribute) for r in readings}
    assert ("java.lang:type=Threading", "ThreadCount") in attributes
    assert ("java.lang:type=Memory", "HeapMemoryUsage") in attributes
    quoted = [r.value for r in readings if r.bean == "kafka.pulse.test:type=Quote"]
    if transport == "jpype":
        assert quoted == [QUOTED]
    else:
        assert isinstance(jmx, JmxqueryTransport)
        # jmxquery's jar cannot encode the value (the batch's JSON breaks): that one query is left out, by name.
        assert quoted == []
        assert jmx.dropped == [queries[1]]


# --- a bean removed between queryNames and getAttributes -----------------------------------------------------------


class _RemovesAfterQuery:
    """The real MBean server connection, with one bean unregistered (on the real server) right after `queryNames`
    listed it: the race Kafka runs whenever it drops a topic's or a connection's beans during a scrape."""

    def __init__(self, connection: Any, server_mbeans: Any, name: Any) -> None:
        self._connection, self._server_mbeans, self._name = connection, server_mbeans, name

    def queryNames(self, pattern: Any, query: Any) -> Any:
        names = self._connection.queryNames(pattern, query)
        if self._server_mbeans.isRegistered(self._name):
            self._server_mbeans.unregisterMBean(self._name)
        return names

    def getAttributes(self, name: Any, attributes: Any) -> Any:
        return self._connection.getAttributes(name, attributes)


def test_a_bean_removed_mid_scrape_is_left_out_and_the_rest_is_read(quote_jmx_port: int) -> None:
    """jpype transport: the server answers InstanceNotFoundException for the removed bean; that bean is absent and
    named in `vanished`, every other bean is read, and the connection stays up (no JmxUnreachable)."""
    import jpype

    server_mbeans = jpype.JClass("java.lang.management.ManagementFactory").getPlatformMBeanServer()
    ObjectName = jpype.JClass("javax.management.ObjectName")
    beans = [ObjectName(f"kafka.pulse.test:type=Vanishing,name=b{i}") for i in range(3)]
    for name in beans:
        monitor = jpype.JClass("javax.management.monitor.StringMonitor")()
        monitor.setStringToCompare(f"value of {name}")
        server_mbeans.registerMBean(monitor, name)

    class Racing(JpypeTransport):
        def _connect(self) -> Any:
            return _RemovesAfterQuery(super()._connect(), server_mbeans, beans[1])

    jmx = Racing(JmxBrokerConfig(broker_id=1, port=quote_jmx_port), 20)
    queries = [
        BeanQuery("kafka.pulse.test:type=Vanishing,*", ("StringToCompare",)),
        BeanQuery("java.lang:type=Threading", ("ThreadCount",)),
    ]
    try:
        readings = jmx.read(queries)
        read = {r.bean for r in readings}
        assert read == {str(beans[0]), str(beans[2]), "java.lang:type=Threading"}, read
        assert jmx.vanished == [str(beans[1])]
        again = {r.bean for r in jmx.read(queries)}  # same connection, the bean simply gone
        assert again == {str(beans[0]), str(beans[2]), "java.lang:type=Threading"} and jmx.vanished == []
    finally:
        jmx.close()
        for name in beans:
            if server_mbeans.isRegistered(name):
                server_mbeans.unregisterMBean(name)


# --- what one read asks the broker ----------------------------------------------------------------------------------


class _CountingCalls:
    """The real MBean server connection, counting the round trips a read makes (a busy broker answers each late)."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self.query_names: list[str] = []
        self.get_attributes: list[tuple[str, tuple[str, ...]]] = []

    def queryNames(self, pattern: Any, query: Any) -> Any:
        self.query_names.append(str(pattern))
        return self._connection.queryNames(pattern, query)

    def getAttributes(self, name: Any, attributes: Any) -> Any:
        self.get_attributes.append((str(name), tuple(str(a) for a in attributes)))
        return self._connection.getAttributes(name, attributes)


@pytest.fixture
def sample_beans() -> Iterator[list[str]]:
    """Four JDK StringMonitor beans in a domain of their own: two of key set {type, name}, one with an extra key
    (which `type=A,name=*` must not match), and one of another type."""
    import jpype

    server_mbeans = jpype.JClass("java.lang.management.ManagementFactory").getPlatformMBeanServer()
    ObjectName = jpype.JClass("javax.management.ObjectName")
    names = [
        "kafka.pulse.plan:type=A,name=x1",
        "kafka.pulse.plan:type=A,name=x2",
        "kafka.pulse.plan:type=A,name=x3,extra=e",
        "kafka.pulse.plan:type=B,name=y",
    ]
    for name in names:
        monitor = jpype.JClass("javax.management.monitor.StringMonitor")()
        monitor.setStringToCompare(f"value of {name}")
        server_mbeans.registerMBean(monitor, ObjectName(name))
    try:
        yield names
    finally:
        for name in names:
            if server_mbeans.isRegistered(ObjectName(name)):
                server_mbeans.unregisterMBean(ObjectName(name))


PLAN_QUERIES = [
    BeanQuery("kafka.pulse.plan:type=A,name=*", ("StringToCompare",)),
    BeanQuery("kafka.pulse.plan:type=A,name=x1", ("GranularityPeriod",)),
    BeanQuery("kafka.pulse.plan:type=B,*", ("StringToCompare",)),
    BeanQuery("kafka.pulse.plan:type=Absent,name=none", ("StringToCompare",)),
    BeanQuery("java.lang:type=Threading", ("ThreadCount",)),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_query_reads_exactly_the_beans_its_pattern_names(
    quote_jmx_port: int, sample_beans: list[str], transport: str
) -> None:
    """Both transports, same answer: a domain's patterns are OR-ed into one query, so each pattern's own matches
    must still be told apart (x3's extra key keeps it out of `name=*`), and an exact name nobody registered is
    absent, not an error."""
    x1, x2, _x3, y = sample_beans
    broker = JmxBrokerConfig(broker_id=1, port=quote_jmx_port)
    jmx: JmxTransport = JmxqueryTransport(broker, 20) if transport == "jmxquery" else JpypeTransport(broker, 20)
    try:
        readings = jmx.read(PLAN_QUERIES)
    finally:
        jmx.close()
    read = sorted((r.bean, r.attribute) for r in readings)
    assert read == sorted(
        [
            (x1, "StringToCompare"),
            (x1, "GranularityPeriod"),
            (x2, "StringToCompare"),
            (y, "StringToCompare"),
            ("java.lang:type=Threading", "ThreadCount"),
        ]
    )


def test_a_jpype_read_makes_one_names_query_per_domain_and_one_attributes_call_per_bean(
    quote_jmx_port: int, sample_beans: list[str]
) -> None:
    """Round trips, not the broker's work, made a 10,000-partition broker's read miss jmx.timeout_s: patterns of a
    domain share one queryNames, exact names skip it, and a bean two queries match is read once for both."""
    x1, x2, _x3, y = sample_beans
    calls: list[_CountingCalls] = []

    class Counting(JpypeTransport):
        def _connect(self) -> Any:
            calls.append(_CountingCalls(super()._connect()))
            return calls[-1]

    jmx = Counting(JmxBrokerConfig(broker_id=1, port=quote_jmx_port), 20)
    try:
        jmx.read(PLAN_QUERIES)
        assert jmx.vanished == []  # the absent exact name was never listed, so nothing vanished
    finally:
        jmx.close()
    (counted,) = calls
    assert counted.query_names == ["kafka.pulse.plan:*"]
    assert sorted(counted.get_attributes) == sorted(
        [
            (x1, ("StringToCompare", "GranularityPeriod")),
            (x2, ("StringToCompare",)),
            (y, ("StringToCompare",)),
            ("kafka.pulse.plan:type=Absent,name=none", ("StringToCompare",)),
            ("java.lang:type=Threading", ("ThreadCount",)),
        ]
    )


def test_a_read_under_way_when_the_transport_closes_ends_as_unreachable(
    quote_jmx_port: int, sample_beans: list[str]
) -> None:
    """`run` and `collect` close each broker's transport on stop while its read may be under way; the read must end
    as the transport's own error (logged in one line), not a RuntimeError from readers already shut down, which the
    scraper logged as a crash with a traceback."""
    listing, closed = threading.Event(), threading.Event()

    class HeldInQueryNames(_CountingCalls):
        def queryNames(self, pattern: Any, query: Any) -> Any:
            listing.set()
            assert closed.wait(30), "the test never closed the transport"
            return super().queryNames(pattern, query)

    class Held(JpypeTransport):
        def _connect(self) -> Any:
            return HeldInQueryNames(super()._connect())

    jmx = Held(JmxBrokerConfig(broker_id=1, port=quote_jmx_port), 20)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            jmx.read(PLAN_QUERIES)
            outcome.append(None)
        except BaseException as exc:  # the test inspects whatever the read raised
            outcome.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert listing.wait(30), "the read never reached the broker"
    jmx.close()
    closed.set()
    reader.join(30)
    assert not reader.is_alive()
    (raised,) = outcome
    assert isinstance(raised, JmxUnreachable), repr(raised)
    assert "closed" in str(raised)
