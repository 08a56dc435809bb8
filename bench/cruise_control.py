"""LinkedIn's Cruise Control as the slow-broker detector's peer: built from its source, run beside a dev cluster.

Cruise Control is not on Maven Central: its releases are published to LinkedIn's own Artifactory, which this host
cannot reach. So this builds it from a checkout of github.com/linkedin/cruise-control (main at dadba67e2, whose
gradle.properties pins Kafka 4.0.0) without Gradle, whose distribution is a download too: Maven gathers the
dependencies its build.gradle names (all on Maven Central) and javac compiles the three main modules. The metrics
reporter goes on the brokers' classpath (`DevCluster.plan(extra_jars=...)`); its SlowBrokerFinder is read from the
Cruise Control log, one line per detection round. Nothing of Cruise Control's is kept in this repository.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from pulse.errors import ProcessFailed
from pulse.ports import is_listening
from pulse.process import ManagedProcess

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
CC_DEPENDENCIES = (
    "org.slf4j:slf4j-api:1.7.36",
    "org.apache.logging.log4j:log4j-slf4j-impl:2.17.2",
    "org.apache.logging.log4j:log4j-core:2.17.2",
    "io.netty:netty-handler:4.1.118.Final",
    "io.netty:netty-transport-native-epoll:4.1.118.Final",
    "org.apache.kafka:kafka_2.13:4.0.0",
    "org.apache.kafka:kafka-server:4.0.0",
    "org.apache.kafka:kafka-server-common:4.0.0",
    "org.apache.kafka:kafka-clients:4.0.0",
    "org.apache.kafka:kafka-storage:4.0.0",
    "org.scala-lang:scala-library:2.13.13",
    "org.apache.commons:commons-math3:3.6.1",
    "org.apache.httpcomponents:httpclient:4.5.13",
    "commons-codec:commons-codec:1.15",
    "com.google.code.gson:gson:2.9.0",
    "org.eclipse.jetty:jetty-server:9.4.56.v20240826",
    "org.eclipse.jetty:jetty-servlet:9.4.56.v20240826",
    "io.dropwizard.metrics:metrics-jmx:4.2.9",
    "com.nimbusds:nimbus-jose-jwt:10.0.2",
    "io.swagger.parser.v3:swagger-parser-v3:2.1.16",
    "io.github.classgraph:classgraph:4.8.141",
    "com.google.code.findbugs:jsr305:3.0.2",
    "com.fasterxml.jackson.core:jackson-databind:2.15.2",
    "io.vertx:vertx-web-openapi:4.5.8",
    "io.vertx:vertx-core:4.5.8",
    "io.vertx:vertx-web:4.5.8",
    "io.swagger.core.v3:swagger-annotations:2.0.2",
    "io.swagger.core.v3:swagger-core:2.0.2",
    "com.google.guava:guava:32.1.3-jre",
    "org.json:json:20231013",
    "org.xerial.snappy:snappy-java:1.1.10.5",
)
"""The main modules' runtime dependencies as build.gradle names them at that commit (Gradle resolves the same)."""
MODULES = ("cruise-control-metrics-reporter", "cruise-control-core", "cruise-control")
REPORTER_CLASS = "com.linkedin.kafka.cruisecontrol.metricsreporter.CruiseControlMetricsReporter"
SLOW_BROKER_FINDER = "com.linkedin.kafka.cruisecontrol.detector.SlowBrokerFinder"
API = "/kafkacruisecontrol"


@dataclass(frozen=True)
class CruiseControlBuild:
    """A compiled Cruise Control: `classes/` (all three modules), `libs/` (dependencies), the reporter's own jar."""

    root: Path

    @property
    def classpath(self) -> str:
        return f"{self.root / 'classes'}:{self.root / 'libs' / '*'}"

    @property
    def reporter_jar(self) -> Path:
        return self.root / "cruise-control-metrics-reporter.jar"


def build_cruise_control(repo: Path, cache: Path) -> CruiseControlBuild:
    """Compile HEAD of the git repository `repo` (clone or bare mirror) into `cache/cruise-control/<commit>`, once."""
    commit = _run(["git", "-C", str(repo), "rev-parse", "--short=9", "HEAD"], f"git rev-parse in {repo}").strip()
    build = CruiseControlBuild(cache / "cruise-control" / commit)
    if (build.root / ".complete").exists():
        return build
    shutil.rmtree(build.root, ignore_errors=True)
    (build.root / "classes").mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="cc-build-") as tmp:
        source = Path(tmp) / "src"
        source.mkdir()
        paths = [f"{m}/src/main" for m in MODULES]  # the web UI's bundles (webroot) are left out: not needed
        archive = subprocess.run(["git", "-C", str(repo), "archive", "HEAD", *paths,
                                  ":(exclude)cruise-control/src/main/resources/webroot"],
                                 capture_output=True, timeout=300, check=False)  # fmt: skip
        if archive.returncode != 0:
            raise ProcessFailed(f"git archive in {repo} failed: {archive.stderr.decode(errors='replace')[-2000:]}")
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True, timeout=300)
        (Path(tmp) / "pom.xml").write_text(_render_pom())
        argv = ["mvn", "-B", "-q", f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"-DoutputDirectory={build.root / 'libs'}",
                "-DincludeScope=runtime"]  # fmt: skip
        _run(argv, "Maven gathering Cruise Control's dependencies", cwd=Path(tmp))
        sources = [str(p) for m in MODULES for p in (source / m / "src" / "main" / "java").rglob("*.java")]
        (Path(tmp) / "sources.txt").write_text("\n".join(sources) + "\n")
        argv = ["javac", "-nowarn", "-encoding", "UTF-8", "-proc:none", "-d", str(build.root / "classes"),
                "-cp", str(build.root / "libs" / "*"), f"@{Path(tmp) / 'sources.txt'}"]  # fmt: skip
        _run(argv, "javac compiling Cruise Control")
        for module in MODULES:
            resources = source / module / "src" / "main" / "resources"
            if resources.is_dir():  # the REST API's OpenAPI yaml
                shutil.copytree(resources, build.root / "classes", dirs_exist_ok=True)
    reporter = "com/linkedin/kafka/cruisecontrol/metricsreporter"
    _run(["jar", "cf", str(build.reporter_jar), "-C", str(build.root / "classes"), reporter], "jar")
    (build.root / ".complete").write_text(commit + "\n")
    return build


def _render_pom() -> str:
    deps = "\n".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in (d.split(":") for d in CC_DEPENDENCIES)
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>local.kafka-pulse</groupId><artifactId>cruise-control-runtime</artifactId><version>1</version>
<packaging>pom</packaging><dependencies>
{deps}
</dependencies></project>
"""


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise ProcessFailed(f"{what} failed (status {result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def reporter_overrides(interval_ms: int) -> dict[str, str]:
    """Broker settings that load the metrics reporter and have it report every `interval_ms` (default 60 s)."""
    return {
        "metric.reporters": REPORTER_CLASS,
        "cruise.control.metrics.reporter.metrics.reporting.interval.ms": str(interval_ms),
        "cruise.control.metrics.topic.auto.create": "true",
        "cruise.control.metrics.topic.num.partitions": "1",
        "cruise.control.metrics.topic.replication.factor": "1",
    }


@dataclass(frozen=True)
class FinderSettings:
    """SlowBrokerFinder's knobs, defaults as in its source, except the traffic floor the bench's load must pass."""

    bytes_in_threshold_kb: float = 1.0
    """slow.broker.bytes.in.rate.detection.threshold (default 1024 KB/s: the bench's ~40 KB/s would be skipped)."""
    log_flush_threshold_ms: float = 1000.0
    demotion_score: int = 5


def render_properties(bootstrap: str, port: int, home: Path, interval_ms: int, finder: FinderSettings) -> str:
    """cruisecontrol.properties: sampling, windows and detection every `interval_ms`, only the slow-broker finder
    among the metric anomaly finders, self-healing off so it only reports."""
    capacity = home / "capacity.json"
    every = {"brokerId": "-1", "capacity": {"DISK": "100000", "CPU": "100", "NW_IN": "10000", "NW_OUT": "10000"}}
    capacity.write_text(json.dumps({"brokerCapacities": [every]}) + "\n")
    (home / "clusterConfigs.json").write_text("{}\n")
    goals = "com.linkedin.kafka.cruisecontrol.analyzer.goals.RackAwareGoal"
    settings = {
        "bootstrap.servers": bootstrap,
        "metric.sampler.class": "com.linkedin.kafka.cruisecontrol.monitor.sampling.CruiseControlMetricsReporterSampler",
        "sample.store.class": "com.linkedin.kafka.cruisecontrol.monitor.sampling.KafkaSampleStore",
        "sample.store.topic.replication.factor": "1",
        "partition.metric.sample.store.topic": "__KafkaCruiseControlPartitionMetricSamples",
        "broker.metric.sample.store.topic": "__KafkaCruiseControlModelTrainingSamples",
        "metric.sampling.interval.ms": str(interval_ms),
        "metadata.max.age.ms": str(interval_ms),  # neither this nor the reporter's interval may exceed sampling's
        "cruise.control.metrics.reporter.metrics.reporting.interval.ms": str(interval_ms),
        "partition.metrics.window.ms": str(interval_ms),
        "num.partition.metrics.windows": "5",
        "broker.metrics.window.ms": str(interval_ms),
        "num.broker.metrics.windows": "20",
        "min.samples.per.partition.metrics.window": "1",
        "min.samples.per.broker.metrics.window": "1",
        "capacity.config.file": str(capacity),
        "cluster.configs.file": str(home / "clusterConfigs.json"),
        "sampling.allow.cpu.capacity.estimation": "true",
        "default.goals": goals,
        "goals": goals,
        "hard.goals": goals,
        "anomaly.detection.goals": goals,
        "intra.broker.goals": "com.linkedin.kafka.cruisecontrol.analyzer.goals.IntraBrokerDiskCapacityGoal",
        "anomaly.notifier.class": "com.linkedin.kafka.cruisecontrol.detector.notifier.SelfHealingNotifier",
        "metric.anomaly.finder.class": SLOW_BROKER_FINDER,
        "metric.anomaly.class": "com.linkedin.kafka.cruisecontrol.detector.SlowBrokers",  # the class its finder builds
        "anomaly.detection.interval.ms": str(interval_ms),
        "metric.anomaly.detection.interval.ms": str(interval_ms),
        "self.healing.enabled": "false",
        "slow.broker.bytes.in.rate.detection.threshold": str(finder.bytes_in_threshold_kb),
        "slow.broker.log.flush.time.threshold.ms": str(finder.log_flush_threshold_ms),
        "slow.broker.demotion.score": str(finder.demotion_score),
        "topic.config.provider.class": "com.linkedin.kafka.cruisecontrol.config.KafkaAdminTopicConfigProvider",
        "webserver.http.port": str(port),
        "webserver.http.address": "127.0.0.1",
        "webserver.api.urlprefix": f"{API}/*",
        "webserver.ui.diskpath": str(home / "no-ui"),
        "webserver.accesslog.enabled": "false",
        "two.step.verification.enabled": "false",
        "vertx.enabled": "false",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


LOG_CONFIG = """rootLogger.level=INFO
appenders=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={log}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d{{yyyy-MM-dd HH:mm:ss,SSS}}] %p %m (%c)%n
rootLogger.appenderRefs=file
rootLogger.appenderRef.file.ref=file
"""


@dataclass
class CruiseControl:
    """One Cruise Control process on 127.0.0.1:`port`, its log in `home`; stopped by PID."""

    build: CruiseControlBuild
    home: Path
    port: int
    process: ManagedProcess | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.home / "kafkacruisecontrol.log"

    def start(self, properties: str, timeout_s: float = 180.0) -> None:
        (self.home / "cruisecontrol.properties").write_text(properties)
        (self.home / "log4j2.properties").write_text(LOG_CONFIG.format(log=self.log_path))
        argv = ["java", "-Xmx768m", f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                "-cp", self.build.classpath, "com.linkedin.kafka.cruisecontrol.KafkaCruiseControlMain",
                str(self.home / "cruisecontrol.properties"), str(self.port), "127.0.0.1"]  # fmt: skip
        self.process = ManagedProcess("cruise control", argv, self.home / "stdout.log", cwd=self.home).start()
        self.process.wait_ready(lambda: is_listening(self.port), timeout_s, "listening")

    def state(self) -> dict[str, object]:
        """The anomaly detector's and monitor's state from the REST API."""
        url = f"http://127.0.0.1:{self.port}{API}/state?substates=anomaly_detector,monitor&json=true"
        response = httpx.get(url, timeout=30)
        response.raise_for_status()
        body: dict[str, object] = response.json()
        return body

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


@dataclass(frozen=True)
class Round:
    """One SlowBrokerFinder detection round read from the log: suspects (slow this round) and those it reported."""

    at: float
    """Epoch seconds of the round's 'Suspected Slow Brokers' line."""
    suspects: frozenset[int]
    reported: dict[int, int]
    """Broker -> slowness score, for the brokers this round's anomaly names (score >= the demotion score)."""


_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
_SUSPECTS = re.compile(r"Suspected Slow Brokers: \[(.*)\]")
_BROKER_ID = re.compile(r"brokerId=(\d+)")
_REPORTED = re.compile(r"(\d+) is slow \(score: (\d+)/\d+\)")


def parse_rounds(log_text: str) -> list[Round]:
    """The finder's rounds in order: its suspects line opens one; the anomaly lines after it belong to it."""
    rounds: list[Round] = []
    for line in log_text.splitlines():
        stamp = _STAMP.match(line)
        if stamp is None:
            continue
        at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp()
        if (suspects := _SUSPECTS.search(line)) is not None:
            ids = frozenset(int(b) for b in _BROKER_ID.findall(suspects.group(1)))
            rounds.append(Round(at, ids, {}))
        elif rounds and " is slow (score: " in line:
            rounds[-1].reported.update({int(b): int(s) for b, s in _REPORTED.findall(line)})
    return rounds
