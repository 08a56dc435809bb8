"""Arrow tables from columns of Python values, built from numpy buffers instead of `pyarrow.array`: converting
Python objects with `pyarrow.array` (or `Table.from_pydict`) imports pandas on first use, about 50 MB resident in
a process that never needs it (the lag evaluation log, docs/benchmarks.md "Lag evaluator").

The values and the resulting arrays are those `pyarrow.array(values, type)` gives for the types a log writes:
strings, booleans, 32/64-bit integers, doubles and timestamps (as integers in their unit), each nullable (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

_NUMPY_TYPES: dict[pa.DataType, type[np.generic]] = {
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.float64(): np.float64,
}
MAX_STRING_BYTES = (1 << 31) - 1
"""A `string` column's bytes at most (32-bit offsets)."""


def _validity(values: Sequence[Any]) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap (None when nothing is null) and the null count."""
    valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=len(values))
    nulls = len(values) - int(valid.sum())
    if not nulls:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def column(values: Sequence[Any], type_: pa.DataType) -> pa.Array:
    """One column as `pyarrow.array(values, type_)` would build it; TypeError for a type it does not handle,
    OverflowError for an integer out of the type's range, UnicodeEncodeError for a string that is not text."""
    n = len(values)
    validity, nulls = _validity(values)
    if pa.types.is_string(type_):
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
        if offsets[-1] > MAX_STRING_BYTES:
            raise OverflowError(f"a string column of {int(offsets[-1])} bytes exceeds {MAX_STRING_BYTES}")
        data = pa.py_buffer(b"".join(encoded))
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets.astype(np.int32)), data], nulls)
    if pa.types.is_boolean(type_):
        bits = np.fromiter((v is not None and bool(v) for v in values), dtype=np.bool_, count=n)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(np.packbits(bits, bitorder="little"))], nulls)
    if pa.types.is_timestamp(type_):
        dtype: type[np.generic] = np.int64
    elif type_ in _NUMPY_TYPES:
        dtype = _NUMPY_TYPES[type_]
    else:
        raise TypeError(f"no columnar conversion for {type_}")
    data_array = np.array([0 if v is None else v for v in values], dtype=dtype)
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(data_array)], nulls)


def table(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """The table of `schema` holding `columns` (one sequence per field, all of one length), as
    `pyarrow.Table.from_pydict(columns, schema=schema)` builds it."""
    return pa.Table.from_arrays([column(columns[f.name], f.type) for f in schema], schema=schema)
