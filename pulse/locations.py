"""Where a Spark job keeps files: a local path or a Hadoop filesystem URL (`file:///...`, `hdfs://...`, `s3a://...`),
checked here and handed to Spark unchanged, so the store can be one no two hosts need to mount (docs/slo.md,
"On a cluster"). Pure: nothing here touches the store.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from pulse.redact import redact_url

HADOOP_SCHEMES = (
    "file",
    "hdfs",
    "viewfs",
    "webhdfs",
    "swebhdfs",
    "s3a",
    "gs",
    "abfs",
    "abfss",
    "wasb",
    "wasbs",
    "oss",
    "cosn",
    "ofs",
    "o3fs",
)
"""Schemes of the Hadoop filesystems Spark reads and writes (each needs its connector on Spark's classpath, except
`file`, `hdfs`, `viewfs` and `webhdfs`, which Spark ships)."""

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):")


def is_url(location: str) -> bool:
    """A location with a scheme (`hdfs://nn/x`), as opposed to a local path (`/x`, `x`)."""
    return _SCHEME.match(location) is not None and not re.match(r"^[A-Za-z]:[\\/]", location)


def check_location(location: str, base_dir: Path | None = None) -> str:
    """`location` as Spark is to get it: a relative local path made absolute against `base_dir`; a URL checked
    (known scheme, `//`, a path; `file:` local) and kept verbatim. ValueError names what is wrong, never the
    URL's userinfo."""
    text = location.strip()
    if not text:
        raise ValueError("is empty; give a local directory or a URL such as hdfs://namenode:8020/kafka-pulse")
    if not is_url(text):
        path = Path(text).expanduser()
        return str(base_dir / path if base_dir is not None and not path.is_absolute() else path)
    shown = redact_url(text)
    scheme = text.split(":", 1)[0].lower()
    if scheme not in HADOOP_SCHEMES:
        known = ", ".join(f"{s}://" for s in HADOOP_SCHEMES)
        raise ValueError(f"{shown!r}: {scheme}:// is not a Hadoop filesystem Spark knows (one of {known})")
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise ValueError(f"{shown!r} is not a URL: {exc}") from None
    if not text[len(scheme) + 1 :].startswith("//"):
        raise ValueError(f"{shown!r}: write {scheme}://<authority>/<path> (file:///<path> for a local one)")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"{shown!r}: a file:// URL names no host (file:///<absolute path>)")
    elif not parts.hostname:
        raise ValueError(f"{shown!r}: {scheme}:// needs an authority (a host, bucket or container)")
    if parts.path.strip("/") == "" and scheme == "file":
        raise ValueError(f"{shown!r}: give a directory below the root")
    if parts.query or parts.fragment:
        raise ValueError(f"{shown!r}: a storage URL takes no ?query or #fragment")
    return text.rstrip("/") if parts.path.strip("/") else text


def join(location: str, name: str) -> str:
    """`name` inside `location`, with `/` whether the location is a path or a URL."""
    return f"{location.rstrip('/')}/{name}"


def local_path(location: str) -> Path | None:
    """The local directory a plain path names; None for a URL (even `file://`: that one goes through Spark)."""
    return None if is_url(location) else Path(location)


def shown(location: str) -> str:
    """`location` for logs and messages: a URL's userinfo and secret parameters replaced by `***`."""
    return redact_url(location) if is_url(location) else location
