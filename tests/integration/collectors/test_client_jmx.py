"""Client-side JMX on the real 3-node cluster: Kafka's own perf tools, JMX on, are listed as
client targets of `kafka-pulse collect`, and their metrics reach /metrics; a killed client is reported down. A real
MirrorMaker 2 (session cluster -> a 1-node cluster) shows its replication latency and record age per partition."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.mapping import Family
from collectors.service import CollectorService
from devstack.perf_clients import PerfClient, start_consumer, start_producer
from devstack.runtime import KafkaRuntime, ensure_tools
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CollectorsConfig, JmxClientConfig
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.ports import free_ports, is_listening
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, _start
from tests.fixtures.logs import register_log
from tests.fixtures.pulse_process import PulseProcesses
from tests.support.mirrormaker import MirrorMaker, MirrorSpec

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
Labels = frozenset[tuple[str, str]]
Samples = dict[tuple[str, Labels], float]


@pytest.fixture(scope="module")
def tools() -> KafkaRuntime:
    """The client-tools classpath (`kafka-pulse dev fetch` gathers it; gathered here if it is not yet)."""
    return ensure_tools(KAFKA_VERSION, cache_dir())


@pytest.fixture
def perf_clients(
    kafka: KafkaHandle, tools: KafkaRuntime, tmp_path: Path
) -> Iterator[tuple[PerfClient, PerfClient, str]]:
    """A producer perf tool at 200 records/s (for up to 5 min) and a consumer perf tool in a group of its own, on a
    3-partition topic; yields (producer, consumer, topic) and stops both by PID."""
    topic = kafka.create_topic("client-jmx", partitions=3, replication_factor=3)
    suffix = uuid.uuid4().hex[:6]
    started: list[PerfClient] = []
    try:
        producer = start_producer(tools, tmp_path, kafka.bootstrap_servers, topic, f"pulse-perf-producer-{suffix}",
                                  throughput=200, duration_s=300)  # fmt: skip
        started.append(producer)
        register_log(producer.name, producer.log_path)
        consumer = start_consumer(tools, tmp_path, kafka.bootstrap_servers, topic, f"pulse-perf-consumer-{suffix}",
                                  group=f"pulse-perf-{suffix}", idle_timeout_s=600)  # fmt: skip
        started.append(consumer)
        register_log(consumer.name, consumer.log_path)
        yield producer, consumer, topic
    finally:
        for client in started:
            client.stop()


def scrape(url: str) -> Samples:
    """Every sample /metrics shows, keyed by (sample name, label set); an unreachable endpoint shows nothing."""
    try:
        text = httpx.get(url, timeout=5).text
    except httpx.HTTPError:
        return {}
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The one sample called `name` whose labels include `labels`, or None."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    assert len(found) <= 1, f"{name}{labels} matches {len(found)} samples"
    return found[0] if found else None


def positive(v: float | None) -> bool:
    return v is not None and v > 0  # NaN (no sample in the window yet) is not > 0


@pytest.mark.parametrize("transport", ["jmxquery", "jpype"])
def test_perf_tools_are_scraped_and_a_killed_client_is_reported_down(
    kafka: KafkaHandle,
    perf_clients: tuple[PerfClient, PerfClient, str],
    transport: str,
    pulse_process: PulseProcesses,
    tmp_path: Path,
) -> None:
    producer, consumer, _topic = perf_clients
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json", exclude={"jmx"})  # clients only, no brokers
    cluster["security"] = {"protocol": "PLAINTEXT"}
    clients = [
        {"name": "perf-producer", "port": producer.jmx_port, "cluster": "dev", "timeout_s": 15},
        {"name": "perf-consumer", "port": consumer.jmx_port, "cluster": "dev", "timeout_s": 15},
    ]
    config = {
        "clusters": [cluster],
        "collectors": {"transport": transport, "scrape_interval_s": 2, "clients": clients},
    }
    collect = pulse_process.start("collect", config, home=tmp_path, name=f"collect ({transport})")
    url = f"{collect.url}/metrics"
    p = {"client_target": "perf-producer", "cluster": "dev", "clientid": producer.client_id}
    c = {"client_target": "perf-consumer", "cluster": "dev", "clientid": consumer.client_id}
    try:
        # Producer families, once a produce request has completed inside the metrics window.
        seen = poll(lambda: scrape(url), lambda s: positive(value(s, "kafka_producer_request_latency_avg", **p)),
                    120, "the producer's request-latency-avg > 0 on /metrics")  # fmt: skip
        assert value(seen, "kafka_producer_record_error_rate", **p) == 0
        assert value(seen, "kafka_producer_record_error_total", **p) == 0
        assert value(seen, "kafka_producer_record_retry_rate", **p) is not None
        assert value(seen, "kafka_producer_produce_throttle_time_avg", **p) is not None

        # Consumer families, once the group gave it all three partitions.
        seen = poll(
            lambda: scrape(url),
            lambda s: (
                value(s, "kafka_consumer_coordinator_assigned_partitions", **c) == 3
                and positive(value(s, "kafka_consumer_fetch_manager_fetch_latency_avg", **c))
            ),
            120,
            "the consumer's 3 assigned partitions and fetch-latency-avg > 0 on /metrics",
        )
        lag = value(seen, "kafka_consumer_fetch_manager_records_lag_max", **c)
        assert lag is not None and not lag < 0
        assert value(seen, "kafka_consumer_fetch_manager_fetch_throttle_time_avg", **c) is not None
        assert value(seen, "kafka_consumer_coordinator_commit_latency_avg", **c) is not None
        # A client's samples carry its own target only: no producer family on the consumer target, and back.
        assert value(seen, "kafka_producer_request_latency_avg", client_target="perf-consumer") is None
        assert value(seen, "kafka_consumer_coordinator_assigned_partitions", client_target="perf-producer") is None
        for target in ("perf-producer", "perf-consumer"):
            assert value(seen, "kafka_pulse_client_jmx_up", client_target=target, cluster="dev") == 1

        # kill -9 the producer: its target is down, keeps its last success time, and loses its values.
        assert producer.running(), "the producer perf tool ended before the test killed it"
        producer.kill()
        assert not is_listening(producer.jmx_port)
        down = poll(lambda: scrape(url),
                    lambda s: value(s, "kafka_pulse_client_jmx_up", client_target="perf-producer") == 0,
                    60, "perf-producer reported down")  # fmt: skip
        last_success = value(down, "kafka_pulse_client_jmx_last_success_timestamp_seconds",
                             client_target="perf-producer")  # fmt: skip
        assert last_success is not None and not math.isnan(last_success)
        assert value(down, "kafka_producer_request_latency_avg", **p) is None
        failures = value(down, "kafka_pulse_client_jmx_scrape_failures_total", client_target="perf-producer",
                         reason="unreachable")  # fmt: skip
        assert failures is not None and failures >= 1
        # ... while the consumer target stays up with its values, scrape after scrape.
        later = poll(
            lambda: scrape(url),
            lambda s: (value(s, "kafka_pulse_client_jmx_last_success_timestamp_seconds", client_target="perf-consumer")
                       or 0) > last_success + 2,
            60,
            "a consumer scrape after the producer died",
        )  # fmt: skip
        assert value(later, "kafka_pulse_client_jmx_up", client_target="perf-consumer") == 1
        assert value(later, "kafka_consumer_coordinator_assigned_partitions", **c) == 3
        assert value(later, "kafka_pulse_client_jmx_up", client_target="perf-producer") == 0
        assert value(later, "kafka_pulse_client_jmx_last_success_timestamp_seconds",
                     client_target="perf-producer") == last_success  # fmt: skip
    finally:
        returncode = collect.stop(grace_s=15)  # SIGTERM: collect shuts its listener and scrapers down
    assert returncode == 0, collect.log()[-3000:]
    # The failure is logged under the client's name and address, never as a broker.
    assert f"client target perf-producer JMX at 127.0.0.1:{producer.jmx_port}" in collect.log()


# A process that used the jpype transport, exiting while Java collects garbage: RMI's DGC client runs System.gc()
# every `gcInterval` ms, and JPype's reference queue enters Python after each one. Without the transport's exit
# hook, one `collect` exit in about twenty aborted ("PyGILState_Release ... must be current"); here every one did.
GC_AT_EXIT = """
import sys, time
import jpype
from collectors.catalogue import BeanQuery
from collectors.transport import JpypeTransport, ensure_jvm
from pulse.config import JmxBrokerConfig

port = int(sys.argv[1])
ensure_jvm(10)
System = jpype.JClass("java.lang.System")
System.setProperty("sun.rmi.dgc.client.gcInterval", "5")
System.setProperty("java.rmi.server.hostname", "127.0.0.1")
jpype.JClass("java.rmi.registry.LocateRegistry").createRegistry(port)
server = jpype.JClass("java.lang.management.ManagementFactory").getPlatformMBeanServer()
url = jpype.JClass("javax.management.remote.JMXServiceURL")(f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi")
jpype.JClass("javax.management.remote.JMXConnectorServerFactory").newJMXConnectorServer(url, None, server).start()
transport = JpypeTransport(JmxBrokerConfig(broker_id=1, port=port), 10)
assert transport.read([BeanQuery("java.lang:type=Threading", ("ThreadCount",))])
transport.close()
time.sleep(0.3)
"""


def test_a_jpype_process_exits_cleanly_while_java_collects_garbage(tmp_path: Path) -> None:
    for _ in range(2):
        (port,) = free_ports(1)
        done = subprocess.run(
            [sys.executable, "-c", GC_AT_EXIT, str(port)], cwd=REPO, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]


# --- MirrorMaker 2 ---------------------------------------------------------------------------------------------------

MM2_START_TIMEOUT_S = 240.0
"""MM2 alone crosses its first marker in about 11 s (tests/fixtures/mirror.py); room for a loaded CI."""


@pytest.fixture(scope="module")
def mm2(kafka: KafkaHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MirrorMaker, str]]:
    """MM2 with JMX on loopback, replicating a 3-partition topic of the session cluster (`source`) to a 1-node
    cluster of this module (`target`); yields (MirrorMaker, source topic) and stops both by PID. Not one cluster
    for both ends: MM2 always copies heartbeats topics, and `source.heartbeats` would be copied again, forever."""
    topic = kafka.create_topic("mm2-jmx", partitions=3, replication_factor=3)
    (jmx_port,) = free_ports(1)
    with contextlib.ExitStack() as stack:
        start = contextlib.contextmanager(_start)
        home = tmp_path_factory.mktemp("mm2-target")
        target = stack.enter_context(start(home, 1, KAFKA_VERSION, Security.PLAINTEXT, "mm2-target"))
        spec = MirrorSpec(kafka.bootstrap_servers, target.bootstrap_servers, topics=(topic,), source_brokers=3)
        mirrormaker = MirrorMaker(tmp_path_factory.mktemp("mm2-jmx"), spec, KAFKA_VERSION, cache_dir(), jmx_port)
        register_log("mirrormaker2 (client JMX)", mirrormaker.log_path)
        stack.callback(mirrormaker.stop)
        yield mirrormaker.start(MM2_START_TIMEOUT_S), topic


@pytest.mark.parametrize("transport", ["jmxquery", "jpype"])
def test_mirrormaker_replication_latency_and_record_age_per_partition(
    kafka: KafkaHandle, mm2: tuple[MirrorMaker, str], transport: str
) -> None:
    mirrormaker, topic = mm2
    assert mirrormaker.jmx_port is not None
    target = JmxClientConfig(name="mm2", port=mirrormaker.jmx_port, cluster="dev", timeout_s=15)
    config = CollectorsConfig.model_validate({"transport": transport, "scrape_interval_s": 2, "clients": [target]})
    service = CollectorService([], config)
    producer = kafka.producer()
    remote = mirrormaker.mirrored(topic)
    prefix = "kafka_connect_mirror_mirrorsourceconnector_"

    def latest() -> dict[str, Family]:
        """Records keep flowing (the -max/-min/-avg stats cover a 30 s window); then the latest scrape's families."""
        for i in range(30):
            producer.produce(topic, value=b"m" * 50, partition=i % 3)
        producer.flush(10)
        result = service.clients["mm2"].result
        return (result.value if result is not None else None) or {}

    def values(families: dict[str, Family], stem: str) -> dict[str, float]:
        """Partition -> value of `prefix + stem` for the mirrored topic."""
        family = families.get(prefix + stem)
        samples = family.samples if family is not None else []
        return {dict(s.labels)["partition"]: s.value for s in samples if dict(s.labels)["topic"] == remote}

    def ordered(families: dict[str, Family]) -> bool:
        """min <= avg <= max per partition. The three are attributes read one after another, so a stats window
        that rolls between the reads can break the order in one scrape (seen: min 30 > avg 28.2); the next agrees."""
        for metric in ("replication_latency_ms", "record_age_ms"):
            low, high, mean = (values(families, metric + stat) for stat in ("_min", "_max", "_avg"))
            if not all(0 <= low[p] <= mean[p] <= high[p] for p in "012"):
                return False
        return True

    def complete(families: dict[str, Family]) -> bool:
        maxima = [values(families, f"{m}_max") for m in ("replication_latency_ms", "record_age_ms")]
        present = all(set(v) == {"0", "1", "2"} and not any(map(math.isnan, v.values())) for v in maxima)
        return present and ordered(families)

    service.start()
    try:
        seen = poll(latest, complete, 120, f"MM2 replication latency and record age for every partition of {remote}")
    finally:
        service.stop()
    for metric in ("replication_latency_ms", "record_age_ms"):
        now = values(seen, metric)
        assert all(now[partition] >= 0 for partition in "012"), (metric, now)
    max_family = seen[prefix + "replication_latency_ms_max"]
    ours = sorted((dict(s.labels) for s in max_family.samples if ("topic", remote) in s.labels),
                  key=lambda labels: labels["partition"])  # fmt: skip
    assert ours == [
        {"source": "source", "target": "target", "topic": remote, "partition": partition, "client_target": "mm2",
         "cluster": "dev"}
        for partition in "012"
    ]  # fmt: skip
