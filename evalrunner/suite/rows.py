"""A suite's source row before its cells are parsed: what every reader (xlsx, csv, json)
hands to the case builder, with what is needed to name a cell in an error."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from evalrunner.errors import SuiteError


@dataclass
class Row:
    """One source row before its cells are parsed, with what is needed to name a cell."""

    row: int
    values: dict[str, Any]
    labels: dict[str, str] = field(default_factory=dict)  # canonical -> header as written
    cells: dict[str, str] = field(default_factory=dict)  # canonical -> "B7" (spreadsheets)
    metadata: dict[str, Any] = field(default_factory=dict)
    sheet: str | None = None
    where: str | None = None  # JSON path such as "tests[0].test_cases[2]"
    #: Every value and key of the row is known to hold nothing to sanitise: its reader
    #: scanned the text they were cut from whole (CSV), so no cell is scanned again.
    clean: bool = False

    def error(self, column: str, message: str, source: str) -> SuiteError:
        """The error for one of this row's cells, naming the row, the column as its header
        was written, and the cell (spreadsheets) or JSON path when known."""
        cell = self.cells.get(column)
        hints = [h for h in (f"cell {cell}" if cell else None, self.where) if h]
        suffix = f" ({', '.join(hints)})" if hints else ""
        return SuiteError(
            message + suffix,
            source=source,
            sheet=self.sheet,
            row=self.row,
            column=self.labels.get(column, column),
        )


def metadata_value(value: object) -> Any:
    """Keep metadata JSON-friendly: it travels in the case manifest and into details.csv."""
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, str):
        return value.strip() or None
    return value
