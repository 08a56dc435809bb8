"""A standalone ZooKeeper (Debian `zookeeperd` jars) on loopback, needed only by Debian's Burrow 1.2.1, which
refuses to start without one; Kafka itself runs in KRaft mode.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path

from devstack.services import LocalService
from pulse.errors import ProcessFailed
from pulse.ports import LOOPBACK
from pulse.process import require_file, require_program

PACKAGE = "zookeeperd"
JAVA_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

# Debian's zookeeper.jar names slf4j-api in its manifest but no binding; these two (both dependencies of
# libzookeeper-java) give it a Log4j 1.2 backend that we point at our own properties file and stdout.
LOGGING_JARS = {"slf4j-log4j12.jar": "libslf4j-java", "log4j-1.2.jar": "liblog4j1.2-java"}

LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.out
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
"""


def render_zoo_cfg(data_dir: Path, port: int, tick_ms: int = 500) -> str:
    """zoo.cfg for one standalone server bound to 127.0.0.1 only: no AdminServer (8080 by default), and the
    four-letter words `ruok`/`srvr` allowed for readiness checks."""
    settings: Mapping[str, str] = {
        "tickTime": str(tick_ms),
        "dataDir": str(data_dir),
        "clientPort": str(port),
        "clientPortAddress": LOOPBACK,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr",
        "maxClientCnxns": "60",
        "autopurge.purgeInterval": "0",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def four_letter_word(port: int, word: str, host: str = LOOPBACK, timeout_s: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command and return the whole answer ('' when the server is not up yet)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode())
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode(errors="replace")


class ZooKeeper(LocalService):
    """One ZooKeeper JVM with its own conf dir (zoo.cfg, log4j.properties), data dir and log; no JMX port and
    nothing read from /etc/zookeeper or written to /var/log."""

    name = "zookeeper"
    ready_timeout_s = 60.0

    def __init__(self, workdir: Path, port: int | None = None, heap_mb: int = 128) -> None:
        super().__init__(workdir, port)
        self.heap_mb = heap_mb

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    def prepare(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "data").mkdir(exist_ok=True)
        (self.conf_dir / "zoo.cfg").write_text(render_zoo_cfg(self.workdir / "data", self.port))
        (self.conf_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)

    def classpath(self) -> str:
        jars = [require_file(JAVA_DIR / "zookeeper.jar", PACKAGE)]
        jars += [require_file(JAVA_DIR / jar, package) for jar, package in LOGGING_JARS.items()]
        return ":".join([str(self.conf_dir), *map(str, jars)])

    def argv(self) -> list[str]:
        return [
            require_program("java", "default-jre-headless"),
            f"-Xms{min(32, self.heap_mb)}m",
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # a short-lived test server: start fast rather than peak fast
            "-XX:-UsePerfData",  # no /tmp/hsperfdata_<user> file
            "-Djava.awt.headless=true",
            "-cp",
            self.classpath(),
            f"-Dlog4j.configuration=file:{self.conf_dir / 'log4j.properties'}",
            f"-Dzookeeper.log.dir={self.workdir}",
            "-Dzookeeper.root.logger=INFO,CONSOLE",
            "-Dzookeeper.admin.enableServer=false",
            MAIN_CLASS,
            str(self.conf_dir / "zoo.cfg"),
        ]

    def is_ready(self) -> bool:
        # `srvr` reports the mode only once the server is serving; `ruok` answers imok a little earlier.
        return "Mode: standalone" in four_letter_word(self.port, "srvr")

    def four_letter_word(self, word: str) -> str:
        """Ask this server a four-letter word (only `ruok` and `srvr` are whitelisted)."""
        if not self.running():
            raise ProcessFailed(f"{self.name} on {self.address} is not running")
        return four_letter_word(self.port, word)
