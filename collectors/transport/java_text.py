"""Numbers read from the text Java prints for them, so JPype never boxes them into Python.

JPype1 1.6.0-1.7.1 leaks one small block for each java.lang.Long or java.lang.Double it hands to Python
(jpype-project/jpype#1379, fixed upstream after 1.7.1): about 56 blocks per broker scrape, +6.8 MB an hour in the
soak (docs/benchmarks.md, "Soak"). Java's own `toString` of an attribute is a string, which does not leak.
"""

from __future__ import annotations

import re

_JAVA_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?(?:E-?\d+)?|Infinity)|NaN")
"""What Long/Integer/Short/Byte/Double/Float/BigDecimal's `toString` print: never underscores or blanks, which
Python's `float` would also accept."""


def java_number(text: str) -> float | None:
    """The number Java printed as `text`, or None when it is not one (a string value, a boolean, composite data)."""
    return float(text) if _JAVA_NUMBER.fullmatch(text) else None


def attribute_number(printed: str, name: str) -> float | None:
    """The value of a javax.management.Attribute from its `toString` ("<name> = <value>"), when it is a number.
    A string attribute whose text is a number reads as that number."""
    prefix = f"{name} = "
    return java_number(printed[len(prefix) :]) if printed.startswith(prefix) else None


def composite_numbers(printed: str, keys: int) -> list[float | None] | None:
    """The values of a CompositeData, in its keys' order, from its `values().toString()` ("[v1, v2, ...]"): a
    number or None for each; None for all when a value's own text holds ", " and the split cannot be trusted."""
    if not (printed.startswith("[") and printed.endswith("]")):
        return None
    inner = printed[1:-1]
    parts = inner.split(", ") if inner else []
    if len(parts) != keys:
        return None
    return [java_number(part) for part in parts]
