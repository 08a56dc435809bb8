"""Least privilege against a broker that enforces ACLs (KRaft StandardAuthorizer, no ACL means no access): a login
holding exactly the ACLs docs/security.md lists for a component runs that component, and a login missing one of
them gets an error naming the refusal, never a crash and never a verdict. One SASL_SSL cluster for the module.

Measured here, and so left out of the documented sets: DescribeCluster needs no ACL, so only `check` (whose quorum
probe sends DescribeQuorum) needs Describe on the cluster. Kept because this test needs it: Describe on the
`kafka-pulse-` groups, without which the `assign()`-only consumers' FindCoordinator is refused
(GROUP_AUTHORIZATION_FAILED, reported as lag's reason for an unknown cluster at start).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from canary.service import CanaryService
from collectors.cluster_state import assess, fetch_snapshot
from devstack.cluster import DevCluster
from devstack.topology import Security
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.health_check import run_check
from kafka_pulse.check.judge.verdict import Status as CheckStatus
from kafka_pulse.check.judge.verdict import overall
from kafka_pulse.clusters import dev_cluster_config
from lag.assembly import Ingestion, KafkaLagSource
from lag.protocol import Status
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import CanaryConfig, ClusterConfig, LagConfig, PulseConfig
from pulse.errors import KafkaUnavailable
from pulse.kafka_log import verdict_settings
from pulse.paths import cache_dir
from pulse.ports import wait_until
from pulse.profile import client_config, kafka_python_config
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, commit_offsets
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

CLUSTER = "acl"
Acl = tuple[ResourceType, str, ResourcePatternType, AclOperation]
"""One ALLOW ACL: resource type, name, pattern type, operation."""

LIT, PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
TOPIC, GROUP, BROKER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.BROKER
Op = AclOperation


def on_cluster(*ops: AclOperation) -> list[Acl]:
    return [(BROKER, "kafka-cluster", LIT, op) for op in ops]


def on(kind: ResourceType, name: str, *ops: AclOperation, pattern: ResourcePatternType = LIT) -> list[Acl]:
    return [(kind, name, pattern, op) for op in ops]


# docs/security.md, "Least privilege on Kafka", one table row each.
COLLECT = [*on(TOPIC, "*", Op.DESCRIBE, Op.DESCRIBE_CONFIGS)]
LAG_OFFSETS = [
    *on(TOPIC, "__consumer_offsets", Op.READ, Op.DESCRIBE),
    *on(TOPIC, "*", Op.DESCRIBE),
    *on(GROUP, "kafka-pulse-", Op.DESCRIBE, pattern=PRE),
]
LAG_ADMIN = [*on(GROUP, "*", Op.DESCRIBE), *on(TOPIC, "*", Op.DESCRIBE)]


def canary_acls(topic: str, commit_group: str | None = None) -> list[Acl]:
    return [
        *on_cluster(Op.ALTER),
        *on(TOPIC, topic, Op.CREATE, Op.WRITE, Op.READ, Op.DESCRIBE, Op.ALTER),
        *on(GROUP, commit_group or f"{topic}-commit", Op.READ),
        *on(GROUP, "kafka-pulse-", Op.DESCRIBE, pattern=PRE),
    ]


def check_acls(topic: str) -> list[Acl]:
    return [
        *on_cluster(Op.DESCRIBE),
        *on(TOPIC, "*", Op.DESCRIBE, Op.DESCRIBE_CONFIGS),
        *on(GROUP, "*", Op.DESCRIBE),
        *on(TOPIC, topic, Op.WRITE, Op.READ),
    ]


@dataclass
class AclCluster:
    kafka: KafkaHandle
    admin: AdminClient
    """The dev login `pulse`, a super user."""

    def principal(self, acls: Sequence[Acl]) -> ClusterConfig:
        """A new SCRAM login holding exactly `acls`, as a cluster config; ready when it can log in."""
        user = f"lp-{uuid.uuid4().hex[:8]}"
        password = uuid.uuid4().hex
        upsert = UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
        )
        for future in self.admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
        bindings = [
            AclBinding(kind, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)
            for kind, name, pattern, op in acls
        ]
        for result in (self.admin.create_acls(bindings) if bindings else {}).values():
            result.result(timeout=30)
        # None matches any name or host (confluent-kafka's filter semantics; its stubs type them as str only).
        mine = AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{user}", None,  # type: ignore[arg-type]
            Op.ANY, AclPermissionType.ANY,
        )  # fmt: skip
        assert wait_until(
            lambda: len(self.admin.describe_acls(mine).result(timeout=10)) == len(bindings), 30, interval_s=0.2
        )
        base = dev_cluster_config(self.kafka.cluster, CLUSTER)
        assert base.security.sasl is not None
        sasl = base.security.sasl.model_copy(update={"username": user, "password": SecretStr(password)})
        return base.model_copy(update={"security": base.security.model_copy(update={"sasl": sasl})})


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    cluster = DevCluster.plan(
        tmp_path_factory.mktemp("kafka-acl"), 1, KAFKA_VERSION, Security.SASL_SSL, enforce_acls=True
    )
    register_log("kafka-acl node 1", cluster.log_path(1))
    try:
        cluster.up(cache_dir(), timeout_s=120)
        kafka = KafkaHandle(cluster, 0.0)
        yield AclCluster(kafka, kafka.admin())
    finally:
        cluster.down(keep_data=True)


def test_the_broker_enforces_acls(acl_cluster: AclCluster) -> None:
    """The premise, and why collect needs Describe on every topic: Kafka leaves a topic a login may not describe
    out of its metadata without an error, so the cluster state would cover only the topics it may see."""
    topic = acl_cluster.kafka.create_topic("lp-hidden", partitions=1)
    assert topic in acl_cluster.admin.list_topics(timeout=20).topics
    admin = AdminClient({**client_config(acl_cluster.principal([])), **verdict_settings(CLUSTER)})
    snapshot = fetch_snapshot(admin, CLUSTER, 20)
    assert sorted(snapshot.brokers) == [1] and snapshot.partitions == ()


def test_collect_reads_cluster_state_with_the_documented_acls(acl_cluster: AclCluster) -> None:
    topic = acl_cluster.kafka.create_topic("lp-state", partitions=2)
    admin = AdminClient({**client_config(acl_cluster.principal(COLLECT)), **verdict_settings(CLUSTER)})
    snapshot = fetch_snapshot(admin, CLUSTER, 20)
    health = assess(snapshot, [1])
    assert sorted(snapshot.brokers) == [1]
    assert {p.partition for p in snapshot.partitions if p.topic == topic} == {0, 1}
    assert (health.missing, health.offline, health.controller) == ((), 0, 1)


def test_collect_without_describe_configs_names_the_refusal(acl_cluster: AclCluster) -> None:
    acl_cluster.kafka.create_topic("lp-state", partitions=1)
    no_configs = [acl for acl in COLLECT if acl[3] is not Op.DESCRIBE_CONFIGS]
    admin = AdminClient({**client_config(acl_cluster.principal(no_configs)), **verdict_settings(CLUSTER)})
    with pytest.raises(KafkaUnavailable, match=f"cluster '{CLUSTER}': cannot read cluster state: .*AUTHORIZATION"):
        fetch_snapshot(admin, CLUSTER, 20)


def _lag_status(acl_cluster: AclCluster, mode: Ingestion, acls: Sequence[Acl], settle_s: float) -> tuple[Status, str]:
    """The status lag gives a group committing on a topic (committed by the super user), read with `acls`, and
    why the cluster is unavailable to it, if it is: returns at the first OK or refusal, else after `settle_s`."""
    topic = acl_cluster.kafka.create_topic("lp-lag", partitions=1)
    group = f"lp-app-{mode}-{uuid.uuid4().hex[:6]}"
    producer = acl_cluster.kafka.producer(log_level=0)  # lives until collected, after the cluster stops
    committer = acl_cluster.kafka.consumer(group)
    health = SourceHealth(stale_after_s=30.0, recovery_s=0.0)
    service = LagService(LagConfig(mode="enhanced", intervals=3, offset_refresh_s=0.5, group_allow="^lp-app-"), health)
    principal = acl_cluster.principal(acls)
    offsets = kafka_python_config(principal, "kafka-pulse-test", 10.0)
    source = KafkaLagSource(CLUSTER, client_config(principal), service, health, mode, offsets)
    source.start()
    try:
        deadline = time.monotonic() + settle_s
        offset = 0
        while time.monotonic() < deadline:
            for _ in range(5):
                producer.produce(topic, b"x")
            producer.flush(10)
            offset += 5
            commit_offsets(committer, [TopicPartition(topic, 0, offset)])
            status = service.group_status(CLUSTER, group)
            if status.partitions and status.partitions[0].status is Status.OK:
                return Status.OK, ""
            reason = health.unavailable_reason(CLUSTER, int(time.time() * 1000)) or ""
            if "AUTHORIZATION_FAILED" in reason:  # a refusal is final: no need to wait out `settle_s`
                return status.status, reason
            time.sleep(0.5)  # the group's commit cadence
        reason = health.unavailable_reason(CLUSTER, int(time.time() * 1000)) or ""
        return service.group_status(CLUSTER, group).status, reason
    finally:
        source.stop()
        committer.close()


@pytest.mark.parametrize(("mode", "acls"), [("consumer_offsets", LAG_OFFSETS), ("admin", LAG_ADMIN)])
def test_lag_evaluates_a_group_with_the_documented_acls(
    acl_cluster: AclCluster, mode: Ingestion, acls: list[Acl]
) -> None:
    assert _lag_status(acl_cluster, mode, acls, 45) == (Status.OK, "")


def test_lag_without_read_on_consumer_offsets_is_unknown_naming_the_refusal(acl_cluster: AclCluster) -> None:
    no_read = [acl for acl in LAG_OFFSETS if acl[1:] != ("__consumer_offsets", LIT, Op.READ)]
    assert len(no_read) == len(LAG_OFFSETS) - 1
    status, reason = _lag_status(acl_cluster, "consumer_offsets", no_read, 30)
    assert status in (Status.UNKNOWN, Status.NOTFOUND), status  # never a verdict on the group
    assert "reading __consumer_offsets: KafkaError{code=TOPIC_AUTHORIZATION_FAILED" in reason, reason


def _total(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return sum(
        s.value
        for family in registry.collect()
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_the_canary_probes_and_commits_with_the_documented_acls(acl_cluster: AclCluster) -> None:
    topic = f"lp-canary-{uuid.uuid4().hex[:6]}"
    config = CanaryConfig(topic=topic, interval_s=0.5, replication_factor=1)
    registry = CollectorRegistry()
    service = CanaryService(acl_cluster.principal(canary_acls(topic)), config, registry=registry)
    service.start()
    try:
        ok = wait_until(
            lambda: (
                _total(registry, "kafka_pulse_canary_records_consumed_total") >= 3
                and _total(registry, "kafka_pulse_canary_offset_commits_total", result="ok") >= 1
            ),
            60,
            interval_s=0.5,
        )
        assert ok, {s.name: s.value for f in registry.collect() for s in f.samples if "error" in s.name}
    finally:
        service.stop()


@pytest.mark.parametrize(
    "group_prefix",
    [
        # the default group, outside the `kafka-pulse-` prefix: no Describe either, so FindCoordinator is refused
        # (librdkafka reports that once, as a consumer error) and the commit only ever waits for a coordinator
        pytest.param("", id="refused-at-find-coordinator"),
        # Describe through the prefix, no Read: the coordinator answers OffsetCommit with the refusal
        pytest.param("kafka-pulse-", id="refused-at-offset-commit"),
    ],
)
def test_the_canary_without_read_on_its_commit_group_names_the_refusal(
    acl_cluster: AclCluster, group_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The defect: each commit waited on a coordinator that was refused, so nothing was counted, nothing named
    the missing ACL, and `stop()` waited out the stuck commit."""
    topic = f"lp-canary-{uuid.uuid4().hex[:6]}"
    group = f"{group_prefix}{topic}-commit"
    config = CanaryConfig(topic=topic, interval_s=0.5, replication_factor=1, commit_group=group)
    no_group_read = [acl for acl in canary_acls(topic, group) if acl[:2] != (GROUP, group)]
    assert len(no_group_read) == len(canary_acls(topic, group)) - 1
    registry = CollectorRegistry()
    service = CanaryService(acl_cluster.principal(no_group_read), config, registry=registry)
    commits = "kafka_pulse_canary_offset_commits_total"
    caplog.set_level(logging.WARNING, logger="canary.commit_probe")
    service.start()
    threads = [t for t in threading.enumerate() if t.name.startswith("canary-")]
    try:
        refused = wait_until(
            lambda: (
                _total(registry, commits, result="error", error="GROUP_AUTHORIZATION_FAILED") >= 3
                and _total(registry, "kafka_pulse_canary_records_consumed_total") >= 3  # the rest goes on
            ),
            60,
            interval_s=0.5,
        )
        assert refused, {
            s.labels.get("error"): s.value for f in registry.collect() for s in f.samples if s.name == commits
        }
        assert _total(registry, commits, result="ok") == 0
    finally:
        service.stop()
    assert "canary-commit" in {t.name for t in threads}
    assert [t.name for t in threads if t.is_alive()] == []  # stop() joined every loop: none waits on a commit
    grants = [r.getMessage() for r in caplog.records if f"Read on group '{group}'" in r.getMessage()]
    assert len(grants) == 1, grants  # once for the lasting refusal, not once an interval
    assert f"group '{group}' refused (GROUP_AUTHORIZATION_FAILED)" in grants[0]


def test_check_with_the_documented_acls(acl_cluster: AclCluster) -> None:
    topic = acl_cluster.kafka.create_topic("lp-check", partitions=1)
    config = PulseConfig.model_validate({"canary": {"topic": topic, "manage_topic": False}})
    sections = run_check(config, acl_cluster.principal(check_acls(topic)), Deadline.after(60))
    statuses = {s.name: s.status for s in sections}
    for name in ("brokers", "controller", "partitions", "round_trip"):
        assert statuses[name] is CheckStatus.OK, [(s.name, s.status, s.reasons) for s in sections]


def test_check_without_describe_on_the_cluster_is_unknown_naming_the_refusal(acl_cluster: AclCluster) -> None:
    topic = acl_cluster.kafka.create_topic("lp-check", partitions=1)
    config = PulseConfig.model_validate({"canary": {"topic": topic, "manage_topic": False}})
    no_cluster = [acl for acl in check_acls(topic) if acl[0] is not BROKER]
    sections = run_check(config, acl_cluster.principal(no_cluster), Deadline.after(60))
    controller = next(s for s in sections if s.name == "controller")
    assert controller.status is CheckStatus.UNKNOWN, controller
    assert any("ClusterAuthorizationFailed" in reason for reason in controller.reasons), controller.reasons
    assert overall(sections) is CheckStatus.UNKNOWN  # the cluster may be fine: not CRIT
