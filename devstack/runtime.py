"""The Kafka runtime classpaths, gathered from Maven Central once per version into a cache outside the repo.

A broker needs `org.apache.kafka:kafka_2.13` (which brings every server module at runtime scope) plus a
logging backend, which the core artifact does not bring: Log4j 2 for 4.x, reload4j for 3.x. The client-side
tools (the perf tools of `kafka-tools`, MirrorMaker 2 from `connect-mirror`) get a classpath of their own, so
Connect's dependencies never share a JVM with a broker.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pulse.errors import DependencyMissing, ProcessFailed

DEFAULT_VERSION = "4.4.0"
"""The current 4.x line (docs/cli.md, Kafka versions). Its client-side jars are CLIENT_VERSION's, and remote storage
runs on `tiered_storage.TIERED_STORAGE_VERSION` (Maven Central serves neither for 4.4.0); 4.3.1 stays supported."""

CLIENT_VERSION = "4.3.1"
"""The newest line whose client-side jars (connect-mirror, kafka-streams-examples) Maven Central serves whole; 4.4.0
serves neither, so perf tools, MirrorMaker 2 and the Streams demos for a newer cluster are of this line."""

LEGACY_VERSION = "3.9.2"
"""The newest line Debian's Burrow 1.2.1 can read (4.x dropped ListOffsets v0)."""

LOG4J2_VERSION = "2.24.3"  # what Kafka 4.x's own build ships
SLF4J_VERSION = "1.7.36"  # kafka_2.13 depends on slf4j-api 1.7.x in both lines
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"

BROKER = ("kafka_2.13",)
TOOLS = ("kafka-tools", "connect-mirror", "connect-runtime")
"""ProducerPerformance/ConsumerPerformance live in kafka-tools; MirrorMaker 2's driver in connect-mirror."""
ADMIN_TOOLS = ("kafka-tools",)
"""The admin commands alone (kafka-consumer-groups, kafka-share-groups, kafka-streams-groups), at the cluster's own
version even past CLIENT_VERSION (4.4.0 serves kafka-tools), so a group is described by its own line's tool."""
STREAMS_EXAMPLES = ("kafka-streams-examples",)
"""Kafka's own Streams demos (WordCountDemo) with kafka-streams: a real Streams application for the tests."""
TEST_CLASSIFIER = "test"
"""Maven's classifier of a Kafka module's test classes (`kafka-storage-4.3.1-test.jar`)."""


@dataclass(frozen=True)
class KafkaRuntime:
    """A gathered classpath: `libs/` holds every jar a broker needs."""

    version: str
    libs: Path

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")


def _logging_dependencies(version: str) -> list[tuple[str, str, str]]:
    if int(version.split(".")[0]) >= 4:
        return [
            ("org.apache.logging.log4j", "log4j-core", LOG4J2_VERSION),
            ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J2_VERSION),
        ]
    return [("org.slf4j", "slf4j-reload4j", SLF4J_VERSION)]


def render_pom(version: str, artifacts: tuple[str, ...] = BROKER) -> str:
    """A throwaway POM whose runtime dependencies are exactly the wanted classpath (the broker's by default)."""
    deps = [*(("org.apache.kafka", a, version) for a in artifacts), *_logging_dependencies(version)]
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.kafka-pulse</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def ensure_runtime(version: str, cache: Path, artifacts: tuple[str, ...] = BROKER) -> KafkaRuntime:
    """Return the cached classpath for `version`, gathering it with Maven first if it is not complete yet."""
    root = cache / "kafka" / (version if artifacts == BROKER else f"{version}-{'+'.join(artifacts)}")
    libs = root / "libs"
    marker = root / ".complete"
    if marker.exists():
        return KafkaRuntime(version, libs)
    for tool, package in (("mvn", "maven"), ("java", "openjdk-17-jre-headless")):
        if shutil.which(tool) is None:
            raise DependencyMissing(f"'{tool}' is not on PATH; install the Debian package {package}")
    root.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test workers or shells must not download into one directory
        if marker.exists():
            return KafkaRuntime(version, libs)
        _gather(version, artifacts, libs)
        marker.write_text(version + "\n")
    return KafkaRuntime(version, libs)


CONFIG_COMMAND_MOVED = (4, 4)
"""From Kafka 4.4 ConfigCommand is `org.apache.kafka.tools.ConfigCommand` in kafka-tools, no longer
`kafka.admin.ConfigCommand` in the broker's core jar."""


def version_key(version: str) -> tuple[int, ...]:
    """ "4.10.0" -> (4, 10, 0), so versions compare as numbers (pure)."""
    return tuple(int(part) for part in version.split(".")[:3])


def client_version(version: str) -> str:
    """The version of the client-side jars for a cluster of `version`: its own, never newer than CLIENT_VERSION
    (a 4.3 client speaks to a 4.4 broker; the KafkaRuntime returned carries the version it holds)."""
    return min(version, CLIENT_VERSION, key=version_key)


def config_command_main(version: str) -> str:
    """ConfigCommand's main class in `version` (pure)."""
    moved = version_key(version)[:2] >= CONFIG_COMMAND_MOVED
    return "org.apache.kafka.tools.ConfigCommand" if moved else "kafka.admin.ConfigCommand"


def ensure_tools(version: str, cache: Path) -> KafkaRuntime:
    """The client-tools classpath (perf tools, MirrorMaker 2) for a cluster of `version`."""
    return ensure_runtime(client_version(version), cache, TOOLS)


def ensure_admin_tools(version: str, cache: Path) -> KafkaRuntime:
    """The classpath of Kafka's admin commands for `version`, without Connect's jars."""
    return ensure_runtime(version, cache, ADMIN_TOOLS)


def ensure_config_command(version: str, cache: Path) -> KafkaRuntime:
    """The classpath holding ConfigCommand for a cluster of `version` (the broker's before 4.4, kafka-tools after)."""
    if version_key(version)[:2] >= CONFIG_COMMAND_MOVED:
        return ensure_admin_tools(version, cache)
    return ensure_runtime(version, cache)


def ensure_streams_examples(version: str, cache: Path) -> KafkaRuntime:
    """The classpath of Kafka's Streams demos for a cluster of `version` (a Streams client of `client_version`)."""
    return ensure_runtime(client_version(version), cache, STREAMS_EXAMPLES)


def ensure_test_jar(version: str, cache: Path, artifact: str) -> Path:
    """The test-classes jar of Kafka module `artifact` for `version`, alone (its dependencies are the broker's),
    copied from Maven Central into the cache once: the local tiered storage lives in `kafka-storage`'s."""
    root = cache / "kafka" / f"{version}-{artifact}-{TEST_CLASSIFIER}"
    jar = root / "libs" / f"{artifact}-{version}-{TEST_CLASSIFIER}.jar"
    if (root / ".complete").exists():
        return jar
    if shutil.which("mvn") is None:
        raise DependencyMissing("'mvn' is not on PATH; install the Debian package maven")
    root.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".complete").exists():
            coordinates = f"org.apache.kafka:{artifact}:{version}:jar:{TEST_CLASSIFIER}"
            argv = ["mvn", "-B", "-q", f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={coordinates}"]
            result = subprocess.run(
                [*argv, f"-DoutputDirectory={jar.parent}"], cwd=root, capture_output=True, text=True, timeout=900
            )
            if result.returncode != 0 or not jar.is_file():
                errors = [line for line in result.stdout.splitlines() if "ERROR" in line][:5]
                raise ProcessFailed(
                    f"Maven could not copy {coordinates} from Maven Central:\n" + "\n".join(errors or [result.stderr])
                )
            (root / ".complete").write_text(version + "\n")
    return jar


def _gather(version: str, artifacts: tuple[str, ...], libs: Path) -> None:
    if libs.exists():
        shutil.rmtree(libs)  # a partial copy from an interrupted run
    with tempfile.TemporaryDirectory(prefix="kafka-pulse-pom-") as tmp:
        (Path(tmp) / "pom.xml").write_text(render_pom(version, artifacts))
        argv = [
            "mvn",
            "-B",
            "-q",
            f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            f"-DoutputDirectory={libs}",
            "-DincludeScope=runtime",
        ]
        result = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        errors = [line for line in result.stdout.splitlines() if "ERROR" in line][:5]
        raise ProcessFailed(
            f"Maven could not gather Kafka {version} from Maven Central:\n" + "\n".join(errors or [result.stderr])
        )
    missing = [a for a in artifacts if not any(libs.glob(f"{a}-{version}.jar"))]
    if missing:
        raise ProcessFailed(f"Maven finished but {libs} holds no jar for {', '.join(missing)} {version}")
