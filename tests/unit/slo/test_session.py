"""Which Spark masters make the driver bind to loopback (slo/session.py): its executors reach it there."""

from __future__ import annotations

import pytest

from slo.session import on_loopback


@pytest.mark.parametrize(
    "master",
    ["local[*]", "local[2]", "local", "spark://127.0.0.1:7077", "spark://localhost:7077", "spark://[::1]:7077"],
)
def test_local_and_loopback_masters_bind_the_driver_to_loopback(master: str) -> None:
    assert on_loopback(master)


@pytest.mark.parametrize(
    "master",
    ["yarn", "k8s://https://10.0.0.1:6443", "spark://spark-master:7077", "spark://10.1.2.3:7077", "spark://[::1"],
)
def test_other_masters_keep_spark_s_own_driver_address(master: str) -> None:
    assert not on_loopback(master)
