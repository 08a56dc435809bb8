"""`pulse.arrow_columns` builds the arrays `pyarrow.array` builds, for every type a log writes, nulls included."""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest

from pulse.arrow_columns import column, table

TYPES = [pa.string(), pa.bool_(), pa.int32(), pa.int64(), pa.float64(), pa.timestamp("us", tz="UTC")]


def _value(type_: pa.DataType, rng: random.Random) -> Any:
    if rng.random() < 0.2:
        return None
    if pa.types.is_string(type_):
        return "".join(rng.choice("ab€😀\x00 ") for _ in range(rng.randrange(6)))
    if pa.types.is_boolean(type_):
        return rng.random() < 0.5
    if type_ == pa.int32():
        return rng.randrange(-(2**31), 2**31)
    if type_ == pa.float64():
        return rng.choice([rng.uniform(-1e9, 1e9), 0.0, float("inf")])
    return rng.randrange(-(2**63), 2**63)


@pytest.mark.parametrize("type_", TYPES, ids=str)
@pytest.mark.parametrize("seed", range(5))
def test_column_equals_pyarrow_array(type_: pa.DataType, seed: int) -> None:
    rng = random.Random(seed)
    values = [_value(type_, rng) for _ in range(rng.choice([0, 1, 7, 8, 9, 300]))]
    got = column(values, type_)
    got.validate(full=True)
    assert got.equals(pa.array(values, type=type_))
    assert got.null_count == sum(v is None for v in values)


def test_all_null_and_no_null_columns() -> None:
    for type_ in TYPES:
        assert column([None] * 9, type_).equals(pa.array([None] * 9, type=type_))
    assert column(["x"] * 9, pa.string()).buffers()[0] is None  # no validity bitmap when nothing is null


def test_out_of_range_and_unknown_types_raise() -> None:
    with pytest.raises(OverflowError):
        column([2**31], pa.int32())
    with pytest.raises(TypeError):
        column([1], pa.int8())
    with pytest.raises(UnicodeEncodeError):
        column(["\ud800"], pa.string())


def test_table_matches_from_pydict() -> None:
    schema = pa.schema([pa.field("t", pa.string(), nullable=False), pa.field("n", pa.int64())])
    columns: dict[str, list[Any]] = {"t": ["a", "b"], "n": [None, 3]}
    got = table(columns, schema)
    assert got.schema == schema
    assert got.equals(pa.Table.from_pydict(columns, schema=schema))


def test_does_not_import_pandas() -> None:
    """The reason for the module: `pyarrow.array` imports pandas (about 50 MB resident) on its first call."""
    code = (
        "import sys, pyarrow as pa\n"
        "from pulse.arrow_columns import table\n"
        "s = pa.schema([pa.field('a', pa.string()), pa.field('b', pa.float64()), pa.field('c', pa.bool_())])\n"
        "table({'a': ['x', None], 'b': [1.0, None], 'c': [True, None]}, s)\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
