"""Numbers from the text Java prints: what is a number and what is left to the value itself."""

from __future__ import annotations

import math

import pytest

from collectors.transport.java_text import attribute_number, composite_numbers, java_number


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0.0),
        ("-42", -42.0),
        ("9223372036854775807", 9.223372036854776e18),
        ("1.5", 1.5),
        ("1.0E-5", 1e-5),
        ("-2.5E10", -2.5e10),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
    ],
)
def test_what_java_prints_for_a_number_reads_as_it(text: str, expected: float) -> None:
    assert java_number(text) == expected


@pytest.mark.parametrize("text", ["", "RUNNING", "true", "1_000", " 12", "12 ", "inf", "nan", "0x10", "1e5", "null"])
def test_anything_else_is_not_a_number(text: str) -> None:
    """Python's float() takes several of these; Java never prints them for a number, so they stay values."""
    assert java_number(text) is None


def test_nan_reads_as_nan() -> None:
    value = java_number("NaN")
    assert value is not None and math.isnan(value)


def test_an_attribute_is_read_after_its_own_name() -> None:
    assert attribute_number("Count = 17", "Count") == 17.0
    assert attribute_number("Value = RUNNING", "Value") is None
    assert attribute_number("Value = null", "Value") is None
    assert attribute_number("Count = 17", "Mean") is None  # another attribute's text is never taken


def test_composite_values_split_only_when_the_split_is_sure() -> None:
    assert composite_numbers("[1, 2, 3]", 3) == [1.0, 2.0, 3.0]
    assert composite_numbers("[12, RUNNING]", 2) == [12.0, None]
    assert composite_numbers("[]", 0) == []
    assert composite_numbers("[a, b, c]", 2) is None  # a value held ", ": its keys are fetched one by one
    assert composite_numbers("{1, 2}", 2) is None
