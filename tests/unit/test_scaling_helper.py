"""The linear-time check of tests/support/scaling.py catches what it is there to catch: a
quadratic scan fails it, a linear one passes, on any machine speed."""

from __future__ import annotations

import re

import pytest

from tests.support.scaling import SHRINK, assert_linear

#: "a*b" searched in a run of "a"s: every start position scans to the end, O(n^2).
_QUADRATIC = re.compile("a*b")


def quadratic(text: str) -> object:
    return _QUADRATIC.search(text)


def linear(text: str) -> object:
    return text.count("b") + len(text.encode())


def test_a_quadratic_scan_fails_the_check() -> None:
    # Big enough that the quarter-size run takes ~10 ms of CPU: at 2,000 characters it took
    # a few ms, and noise on that divisor pulled the ratio (about 16) under the bound on a
    # loaded machine.
    n = 16_000
    with pytest.raises(AssertionError, match="not linear"):
        assert_linear(quadratic, "a" * (n // SHRINK), "a" * n)


def test_a_linear_scan_passes_the_check() -> None:
    n = 4_000_000
    assert_linear(linear, "a" * (n // SHRINK), "a" * n)
