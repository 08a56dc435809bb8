"""Storage locations for Spark (pulse/locations.py): local paths made absolute, URLs kept as written once their
scheme and shape are ones Hadoop's filesystems take, and their credentials never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulse.locations import check_location, is_url, join, local_path, shown


@pytest.mark.parametrize(
    "url",
    [
        "file:///var/lib/kafka-pulse/slo",
        "hdfs://namenode:8020/kafka-pulse/slo",
        "s3a://bucket/kafka-pulse",
        "abfss://container@account.dfs.core.windows.net/kp",
        "gs://bucket/kp",
    ],
)
def test_a_hadoop_url_is_handed_over_as_written(url: str) -> None:
    assert check_location(url, Path("/etc/kp")) == url
    assert is_url(url) and local_path(url) is None


def test_a_trailing_slash_is_dropped_so_joined_names_have_one() -> None:
    assert join(check_location("hdfs://nn:8020/kp/"), "buckets") == "hdfs://nn:8020/kp/buckets"
    assert join("/var/kp/", "checkpoint") == "/var/kp/checkpoint"


def test_a_relative_path_is_taken_from_the_config_directory_and_an_absolute_one_kept() -> None:
    assert check_location("state/slo", Path("/etc/kp")) == "/etc/kp/state/slo"
    assert check_location("/srv/slo", Path("/etc/kp")) == "/srv/slo"
    assert local_path("/srv/slo") == Path("/srv/slo") and not is_url("/srv/slo")


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("", "is empty"),
        ("s3://bucket/kp", "s3:// is not a Hadoop filesystem Spark knows"),
        ("hdfs:/kp", "write hdfs://<authority>/<path>"),
        ("file://otherhost/kp", "a file:// URL names no host"),
        ("file:///", "give a directory below the root"),
        ("s3a:///kp", "s3a:// needs an authority"),
        ("hdfs://nn/kp?user=x", "takes no ?query"),
    ],
)
def test_a_location_spark_cannot_use_is_refused_with_why(location: str, why: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_location(location)
    assert why in str(refused.value)


def test_credentials_in_a_url_are_never_shown() -> None:
    secret = "s3a://AKIAEXAMPLE:hunter2@bucket/kp"
    assert "hunter2" not in shown(secret) and "AKIAEXAMPLE" not in shown(secret)
    with pytest.raises(ValueError) as refused:
        check_location("s3://AKIAEXAMPLE:hunter2@bucket/kp")
    assert "hunter2" not in str(refused.value)
