"""Test suites: the case model and the readers for xlsx, csv and json."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalrunner.suite.model import Suite, TestCase, Turn
from evalrunner.suite.readers import read_suite, read_suite_file


# The writers import openpyxl, whose __init__ builds its whole workbook model and imports numpy
# (~0.3 s); every run imports this package to read its suite, few write a workbook.
def write_template(
    path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]] | None = None
) -> Path:
    """:func:`evalrunner.suite.template.write_template`, imported when first called."""
    from evalrunner.suite import template

    return template.write_template(path, rows)


def write_suite_xlsx(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]]) -> Path:
    """:func:`evalrunner.suite.template.write_suite_xlsx`, imported when first called."""
    from evalrunner.suite import template

    return template.write_suite_xlsx(path, rows)


__all__ = [
    "Suite",
    "TestCase",
    "Turn",
    "read_suite",
    "read_suite_file",
    "write_suite_xlsx",
    "write_template",
]
