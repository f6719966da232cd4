"""Parsing and formatting of sizes, frequencies and durations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmtwin.units import (
    format_duration,
    format_frequency,
    format_size,
    parse_duration,
    parse_frequency,
    parse_size,
)

GIB = 2**30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4GB", 4 * GIB),  # GB is binary, as in vSphere
        ("4GiB", 4 * GIB),
        ("512MB", 512 * 2**20),
        ("1TB", 2**40),
        ("64KiB", 65536),
        ("4096B", 4096),
        ("1.5GB", 3 * 2**29),
        ("4 gb", 4 * GIB),
        (4096, 4096),
        ("0", 0),
    ],
)
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2400MHz", 2400), ("2.6GHz", 2600), ("3ghz", 3000), (2600, 2600), ("0MHz", 0)],
)
def test_frequencies(text, expected):
    assert parse_frequency(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500us", 500_000),
        ("500µs", 500_000),
        ("50ms", 50_000_000),
        ("2s", 2 * 10**9),
        ("10min", 600 * 10**9),
        ("1h", 3600 * 10**9),
        ("100ns", 100),
        ("0.5s", 500_000_000),
        (123, 123),
    ],
)
def test_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("parse", "bad", "needle"),
    [
        (parse_size, "4GHz", "KB, MB, GB"),
        (parse_size, "four GB", "a size with a unit"),
        (parse_size, "-1GB", "non-negative"),
        (parse_frequency, "2600", "only 0 may omit the unit"),
        (parse_frequency, "2600Hz", "MHz or GHz"),
        (parse_duration, "10m", "unknown unit 'm'"),
        (parse_duration, "5 sec", "ns, us, ms, s, min, h, day or week"),
        (parse_duration, True, "a duration"),
        (parse_duration, [1], "a duration"),
        (parse_size, "1e40GB", "64-bit"),
    ],
)
def test_bad_units_say_what_is_allowed(parse, bad, needle):
    with pytest.raises(ValueError, match=None) as info:
        parse(bad, allow_bare=False)
    assert needle in str(info.value)


def test_bare_numbers_need_units_in_files_but_zero_does_not():
    with pytest.raises(ValueError, match="ambiguous"):
        parse_size(4096, allow_bare=False)
    assert parse_size(0, allow_bare=False) == 0
    assert parse_duration("0", allow_bare=False) == 0


def test_formatting_picks_the_largest_exact_unit():
    assert format_size(4 * GIB) == "4GB"
    assert format_size(1536 * 2**20) == "1536MB"
    assert format_duration(90 * 10**9) == "90s"
    assert format_duration(600 * 10**9) == "10min"
    assert format_duration(0) == "0ns"
    assert format_frequency(2600) == "2600MHz"


U64 = st.integers(min_value=0, max_value=2**64 - 1)


@given(U64)
def test_size_round_trip(n):
    assert parse_size(format_size(n), allow_bare=False) == n


@given(U64)
def test_duration_round_trip(n):
    assert parse_duration(format_duration(n), allow_bare=False) == n


@given(st.integers(min_value=0, max_value=10**9))
def test_frequency_round_trip(n):
    assert parse_frequency(format_frequency(n), allow_bare=False) == n


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["ns", "us", "ms", "s", "min", "h"]))
def test_duration_units_scale(n, unit):
    factor = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9}[unit]
    assert parse_duration(f"{n}{unit}") == n * factor
