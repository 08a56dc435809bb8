"""`kafka-pulse dev`: a local KRaft cluster from Maven Central jars, for trying kafka-pulse and for its tests."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from devstack import (
    DEFAULT_VERSION,
    LEGACY_VERSION,
    PROFILES,
    TIERED_STORAGE_VERSION,
    DevCluster,
    JmxSecurity,
    Security,
    StutterPlan,
    check_fits,
    cluster_version,
    data_shape,
    dev_home,
    ensure_config_command,
    ensure_runtime,
    ensure_tools,
    fill,
    parse_slow_disk,
    require_dev_extra,
    sigterm_as_interrupt,
    stutter_node,
    tiered_storage_jar,
    tiered_storage_overrides,
)
from kafka_pulse.cli.options import config_option
from pulse.errors import ClusterError, ConfigError
from pulse.paths import cache_dir


def _render(cluster: DevCluster, console: Console) -> None:
    status = cluster.status()
    table = Table(title=f"Kafka {status['kafka_version']} dev cluster ({status['security']})")
    for column in ("node", "rack", "port", "JMX port", "pid", "running"):
        table.add_column(column)
    for broker in status["brokers"]:
        table.add_row(
            str(broker["id"]),
            broker["rack"],
            str(broker["port"]),
            str(broker["jmx_port"]),
            str(broker["pid"] or "-"),
            "yes" if broker["running"] else "NO",
        )
    console.print(table)
    console.print(f"bootstrap servers: {status['bootstrap_servers']}")
    creds = cluster.credentials()
    if creds is not None:
        console.print(
            f"SASL_SSL login: user {creds.username!r}, {creds.mechanism}, CA {creds.ca_file}; "
            f"password in {cluster.home / 'credentials.json'}"
        )


@click.group()
def dev() -> None:
    """Start, inspect, fault and stop a local KRaft cluster on 127.0.0.1 (needs the `dev` extra)."""
    require_dev_extra()


@dev.command()
@config_option
@click.option("--brokers", type=click.Choice(["1", "3"]), default="3", show_default=True)
@click.option(
    "--kafka-version",
    help=f"4.x, or 3.9.x for Burrow.  [default: {DEFAULT_VERSION}; {TIERED_STORAGE_VERSION} with --tiered-storage]",
)
@click.option("--security", type=click.Choice([s.value for s in Security]), default="plaintext", show_default=True)
@click.option(
    "--jmx-security",
    type=click.Choice([s.value for s in JmxSecurity]),
    default="none",
    show_default=True,
    help="JMX login (auth), and over TLS (auth+tls); the login is in jmx-credentials.json (0600), never on argv.",
)
@click.option("--timeout", "timeout_s", type=float, default=120.0, show_default=True)
@click.option(
    "--profile", type=click.Choice(list(PROFILES)), help="A named data shape; `large`: 1,000 topics x 10, 1,000 groups."
)
@click.option("--topics", type=int, help="Topics to create after start-up (batches of 50) [profile's, else 0].")
@click.option("--partitions-per-topic", type=int, help="Partitions of each of those topics [profile's, else 1].")
@click.option("--groups", type=int, help="Consumer groups committing offsets on those topics [profile's, else 0].")
@click.option(
    "--slow-disk",
    "slow_disks",
    multiple=True,
    metavar="NODE:MS",
    help="Node NODE's log directory is a FUSE pass-through sleeping MS before every write and fsync (repeatable).",
)
@click.option(
    "--tiered-storage",
    is_flag=True,
    help="Remote storage on: Kafka's LocalTieredStorage (kafka-storage test jar) in the cluster's home; topics "
    "created with remote.storage.enable=true are tiered.",
)
@click.option(
    "--dynamic-quorum",
    is_flag=True,
    help="A KIP-853 dynamic controller quorum (kraft.version 1): voters can be removed and added with "
    "kafka-metadata-quorum remove-controller / add-controller.",
)
def up(
    config_path: Path | None,
    brokers: str,
    kafka_version: str | None,
    security: str,
    jmx_security: str,
    timeout_s: float,
    profile: str | None,
    topics: int | None,
    partitions_per_topic: int | None,
    groups: int | None,
    slow_disks: tuple[str, ...],
    tiered_storage: bool,
    dynamic_quorum: bool,
) -> None:
    """Gather jars (once per version), format storage, start the nodes and wait until every broker is RUNNING; then
    create the data shape asked for (topics, records, committing groups), with broker heaps sized for it."""
    try:
        shape = data_shape(profile, topics, partitions_per_topic, groups)
        check_fits(shape, int(brokers), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        slow = dict(parse_slow_disk(value, int(brokers)) for value in slow_disks)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    home = dev_home()
    if (home / "state.json").exists():
        existing = DevCluster.load(home)
        running = [n.node_id for n in existing.spec.nodes if existing.is_running(n.node_id)]
        if running:
            raise ClusterError(
                f"a dev cluster is already running at {home} (nodes {running}); run `kafka-pulse dev down` first"
            )
        existing.down()  # stale state from a crashed run
    console = Console(stderr=True)
    kafka_version, note = cluster_version(kafka_version, DEFAULT_VERSION, tiered_storage)
    if note is not None:
        console.print(note)
    started = time.monotonic()
    heap = shape.heap_mb(int(brokers))
    jvm = {n: [f"-Xms{heap // 2}m", f"-Xmx{heap}m"] for n in range(1, int(brokers) + 1)} if heap > 512 else None
    with console.status(f"gathering Kafka {kafka_version}'s jars from Maven Central (once per version)..."):
        ensure_runtime(kafka_version, cache_dir())  # cluster.up finds them cached
        tiered_jars = [tiered_storage_jar(kafka_version, cache_dir())] if tiered_storage else []
    cluster = DevCluster.plan(
        home,
        int(brokers),
        kafka_version,
        Security(security),
        JmxSecurity(jmx_security),
        jvm,
        slow_disks=slow,
        extra_jars=tiered_jars,
        broker_overrides=tiered_storage_overrides(home, Security(security), int(brokers)) if tiered_storage else None,
        dynamic_quorum=dynamic_quorum,
    )
    with console.status(f"starting {brokers} Kafka {kafka_version} node(s)..."):
        cluster.up(cache_dir(), timeout_s)
    if not shape.is_empty:
        with console.status(f"creating {shape.topics:,} topics, {shape.partitions:,} partitions...") as shown:
            fill(cluster.spec.internal_bootstrap, shape, cluster.spec.replication_factor, progress=shown.update)
    console.print(f"ready in {time.monotonic() - started:.1f} s")
    _render(cluster, Console())


@dev.command()
@config_option
@click.option(
    "--kafka-version",
    "versions",
    multiple=True,
    default=(DEFAULT_VERSION, TIERED_STORAGE_VERSION, LEGACY_VERSION),
    show_default=True,
    help="Repeat for several versions.",
)
def fetch(config_path: Path | None, versions: tuple[str, ...]) -> None:
    """Gather the Kafka broker and client-tools jars from Maven Central into the cache ahead of time."""
    console = Console(stderr=True)
    for version in versions:
        with console.status(f"gathering Kafka {version}'s jars from Maven Central (once per version)..."):
            runtime = ensure_runtime(version, cache_dir())
            tools = ensure_tools(version, cache_dir())
            ensure_config_command(version, cache_dir())  # kafka-tools from 4.4 on, for the demo's quota
        click.echo(f"Kafka {version}: {runtime.libs} (tools: {tools.libs})")


@dev.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable status.")
def status(config_path: Path | None, as_json: bool) -> None:
    """Show the dev cluster's brokers; exits 1 when any node is down."""
    cluster = DevCluster.load(dev_home())
    if as_json:
        click.echo(json.dumps(cluster.status(), indent=2))
    else:
        _render(cluster, Console())
    if not all(b["running"] for b in cluster.status()["brokers"]):
        raise SystemExit(1)


@dev.command()
@config_option
@click.option("--keep-data", is_flag=True, help="Keep logs and data (for a post-mortem).")
def down(config_path: Path | None, keep_data: bool) -> None:
    """Stop every node by PID and remove the cluster's data."""
    home = dev_home()
    cluster = DevCluster.load(home)
    cluster.down(keep_data=keep_data)
    click.echo(f"dev cluster stopped{'; data kept in ' + str(home) if keep_data else ''}")


def _fault(name: str, help_text: str) -> click.Command:
    @click.command(name=name, help=help_text)
    @config_option
    @click.argument("node", type=int)
    def command(config_path: Path | None, node: int) -> None:
        cluster = DevCluster.load(dev_home())
        if name == "kill":
            cluster.kill(node)
        elif name == "pause":
            cluster.pause(node)
        elif name == "resume":
            cluster.resume(node)
        else:
            cluster.restart(node, cache_dir())
        click.echo(f"node {node}: {name} done")

    return command


dev.add_command(_fault("kill", "kill -9 one node (a crashed machine)."))
dev.add_command(_fault("pause", "SIGSTOP one node (a hung broker: sockets open, nothing answers)."))
dev.add_command(_fault("resume", "SIGCONT a paused node."))
dev.add_command(_fault("restart", "Start a node again on its data and wait until it is RUNNING."))


@dev.command()
@config_option
@click.argument("node", type=int)
@click.option("--stop-ms", type=int, required=True, help="How long each SIGSTOP lasts (the hang clients see).")
@click.option("--period-ms", type=int, required=True, help="One stop plus one running stretch; > --stop-ms.")
@click.option("--for", "duration_s", type=float, default=None, help="Seconds to stutter; default until Ctrl-C.")
def stutter(config_path: Path | None, node: int, stop_ms: int, period_ms: int, duration_s: float | None) -> None:
    """SIGSTOP/SIGCONT one node in a cycle (a hung-then-passing disk as clients see it); it is left running."""
    try:
        plan = StutterPlan(stop_ms, period_ms, duration_s)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None
    runner = stutter_node(DevCluster.load(dev_home()), node, plan)
    until = f"for {duration_s:g} s" if duration_s is not None else "until Ctrl-C"
    click.echo(f"node {node} (pid {runner.pid}): stopped {stop_ms} ms every {period_ms} ms {until}", err=True)
    try:
        with sigterm_as_interrupt():
            runner.run()
    except KeyboardInterrupt:
        runner.stop()
    click.echo(f"node {node}: stutter done after {runner.cycles} cycles; node running")


@dev.command("slow-disk")
@config_option
@click.argument("node", type=int)
@click.option("--write-ms", type=click.FloatRange(min=0), required=True, help="Sleep before every write.")
@click.option("--fsync-ms", type=click.FloatRange(min=0), default=None, help="Sleep before every fsync [--write-ms].")
def slow_disk(config_path: Path | None, node: int, write_ms: float, fsync_ms: float | None) -> None:
    """Change the delays of NODE's slow log directory (`dev up --slow-disk NODE:MS`) while it runs; 0 restores it."""
    fsync = write_ms if fsync_ms is None else fsync_ms
    DevCluster.load(dev_home()).slow_disk(node, write_ms, fsync)
    click.echo(f"node {node}: log directory writes +{write_ms:g} ms, fsyncs +{fsync:g} ms", err=True)


@dev.command()
@config_option
@click.argument("node", type=int)
@click.option(
    "--backlog-mb",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Backlog written first, which the lagging group then reads from its start.",
)
@click.option(
    "--reader-kb-per-s",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="The lagging group's consumer_byte_rate quota per broker, so it stays behind.",
)
@click.option(
    "--for",
    "duration_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds to run once started; default until Ctrl-C.",
)
def noisy(config_path: Path | None, node: int, backlog_mb: int, reader_kb_per_s: int, duration_s: float | None) -> None:
    """A noisy neighbour on NODE: a group reading a large backlog from its start on partitions NODE leads, while
    producers write another topic NODE leads (Kafka's perf tools; stopped on exit)."""
    from devstack import NoisyNeighbourWorkload, NoisyPlan

    cluster = DevCluster.load(dev_home())
    cluster.node(node)
    version = cluster.spec.kafka_version
    plan = NoisyPlan(node, backlog_records=backlog_mb * 1024, reader_bytes_per_s=reader_kb_per_s * 1024)
    workload = NoisyNeighbourWorkload(
        ensure_config_command(version, cache_dir()),
        ensure_tools(version, cache_dir()),
        dev_home() / "noisy",
        cluster.spec.internal_bootstrap,
        plan,
    )
    click.echo(f"node {node}: writing {backlog_mb} MB to {plan.backlog_topic}, then starting the clients", err=True)
    try:
        with sigterm_as_interrupt():
            workload.start()
            click.echo(
                f"group {plan.reader_group} reads {plan.backlog_topic} from its start at {reader_kb_per_s} kB/s per "
                f"broker; producers write {plan.victim_topic}; pids {workload.pids}",
                err=True,
            )
            until = time.monotonic() + duration_s if duration_s is not None else None
            while until is None or time.monotonic() < until:
                time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        workload.stop()
    click.echo(f"node {node}: noisy-neighbour clients stopped (topics kept)", err=True)
