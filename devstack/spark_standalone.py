"""A Spark standalone cluster on loopback from the Spark that pyspark ships (its `bin/spark-class`): one master and
N one-core workers, each its own process stopped by PID. The SLO job's tests and bench/slo_bench.py run the job on
it to show that a real cluster (executors in other JVMs and Python workers) gives the results of `local[*]`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from pulse.errors import ProcessFailed
from pulse.ports import LOOPBACK, free_ports
from pulse.process import ManagedProcess, tail


def spark_home() -> Path:
    """pyspark's package directory: it holds Spark's jars and `bin/` (a full Spark distribution's layout)."""
    import pyspark

    return Path(pyspark.__file__).parent


class SparkStandalone:
    """`master_url` (spark://127.0.0.1:P) for the job, `ui_url` for the master's JSON (`/json/`). Logs, work and
    scratch directories under `workdir`."""

    def __init__(
        self, workdir: Path, workers: int = 2, worker_memory: str = "1g", ready_timeout_s: float = 120
    ) -> None:
        self.workdir = workdir
        self.worker_count = workers
        self.ready_timeout_s = ready_timeout_s
        master_port, ui_port, *worker_ports = free_ports(2 + 2 * workers)
        self.master_url = f"spark://{LOOPBACK}:{master_port}"
        self.ui_url = f"http://{LOOPBACK}:{ui_port}"
        spark_class = str(spark_home() / "bin" / "spark-class")
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOG_DIR": str(workdir / "logs"),
            "SPARK_LOCAL_DIRS": str(workdir / "scratch"),
            # Executors start the driver's `python3` (PYSPARK_PYTHON unset): this interpreter, found first on PATH.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        self.master = ManagedProcess(
            "spark master",
            [spark_class, "org.apache.spark.deploy.master.Master", *_bind(master_port, ui_port)],
            workdir / "master.log",
            env=env,
            cwd=workdir,
        )
        self.workers = [
            ManagedProcess(
                f"spark worker {i + 1}",
                [
                    *[spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url],
                    *_bind(worker_ports[2 * i], worker_ports[2 * i + 1]),
                    *["--cores", "1", "--memory", worker_memory, "--work-dir", str(workdir / f"work-{i + 1}")],
                ],
                workdir / f"worker-{i + 1}.log",
                env=env,
                cwd=workdir,
            )
            for i in range(workers)
        ]
        self.started: list[ManagedProcess] = []

    def status(self) -> dict[str, Any]:
        """The master's view: `aliveworkers`, `workers`, `activeapps` (each with `id`, `cores`), ..."""
        body: dict[str, Any] = httpx.get(f"{self.ui_url}/json/", timeout=5).json()
        return body

    def start(self) -> Self:
        """Start the master and the workers; return once every worker is ALIVE at the master."""
        try:
            for process in [self.master, *self.workers]:
                self.started.append(process.start())
            self.master.wait_ready(self._registered, self.ready_timeout_s, f"serving {self.worker_count} workers")
        except BaseException:
            self.stop()
            raise
        return self

    def _registered(self) -> bool:
        for worker in self.workers:
            if not worker.running():
                raise ProcessFailed(f"{worker.name} exited; last lines of {worker.log_path}:\n{tail(worker.log_path)}")
        try:
            return int(self.status()["aliveworkers"]) >= self.worker_count
        except (httpx.HTTPError, ValueError, KeyError):
            return False

    def stop(self) -> None:
        """Workers first (each stops its executors), then the master; by PID, safe to call twice."""
        while self.started:
            self.started.pop().stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def _bind(port: int, ui_port: int) -> list[str]:
    return ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui_port)]
