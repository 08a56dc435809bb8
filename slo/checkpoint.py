"""What the stream reads of Spark's checkpoint (a local path or a Hadoop filesystem URL, pulse/locations.py): the
newest committed micro-batch, and the watermark a micro-batch runs with, both from Spark's own logs (`commits/<id>`,
`offsets/<id>`: a version line, then the batch's metadata as JSON), which a replay after a crash reads again.
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from pulse.locations import join, local_path


def _hadoop(spark: SparkSession, location: str) -> tuple[object, object]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(location)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _names(spark: SparkSession, location: str) -> list[str]:
    """The entries of a checkpoint directory (none when it does not exist yet)."""
    local = local_path(location)
    if local is not None:
        return [p.name for p in local.iterdir()] if local.is_dir() else []
    fs, path = _hadoop(spark, location)
    if not fs.exists(path):  # type: ignore[attr-defined]
        return []
    return [str(s.getPath().getName()) for s in fs.listStatus(path)]  # type: ignore[attr-defined]


def _exists(spark: SparkSession, location: str) -> bool:
    local = local_path(location)
    if local is not None:
        return local.exists()
    fs, path = _hadoop(spark, location)
    return bool(fs.exists(path))  # type: ignore[attr-defined]


def _text(spark: SparkSession, location: str) -> str:
    local = local_path(location)
    if local is not None:
        return local.read_text(encoding="utf-8")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    fs, path = _hadoop(spark, location)
    stream = fs.open(path)  # type: ignore[attr-defined]
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def newest_batch(names: list[str]) -> int:
    """The highest batch id among a log directory's entries (pure; Spark's temporary and checksum files skipped),
    -1 when there is none."""
    return max((int(n) for n in names if n.isdigit()), default=-1)


def last_committed(spark: SparkSession, checkpoint: str) -> int:
    """The newest micro-batch Spark committed in `checkpoint` (-1 before the first): every later one is replayed."""
    return newest_batch(_names(spark, join(checkpoint, "commits")))


def log_field(text: str, name: str) -> int:
    """An integer field of a log entry's metadata line (pure): the first JSON line after the version; 0 without."""
    for line in text.splitlines()[1:]:
        if line.startswith("{"):
            return int(json.loads(line).get(name, 0))
    return 0


def watermark_ms(spark: SparkSession, checkpoint: str, batch_id: int) -> int:
    """The watermark (ms since the epoch) micro-batch `batch_id` runs with: its offset log entry's (written before
    it runs), or the one the batch before committed for its successor if higher (a restart's first batch)."""
    found = log_field(_text(spark, join(join(checkpoint, "offsets"), str(batch_id))), "batchWatermarkMs")
    previous = join(join(checkpoint, "commits"), str(batch_id - 1))
    if batch_id > 0 and _exists(spark, previous):
        found = max(found, log_field(_text(spark, previous), "nextBatchWatermarkMs"))
    return found
