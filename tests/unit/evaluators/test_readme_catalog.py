"""The README's metrics tables list every registered evaluator, under the section of what it
needs, and nothing else: adding an evaluator without documenting it (or documenting one that
was renamed or removed) fails here, not in a user's hands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalrunner.evaluators import Requirement, available, resolve

README = Path(__file__).parents[3] / "README.md"

#: README section → what its evaluators need.
SECTIONS: dict[str, set[Requirement]] = {
    "Metrics": {Requirement.NOTHING},
    "Model metrics": {Requirement.LOCAL_MODEL, Requirement.GPU_BATCH},
    "LLM judge metrics": {Requirement.JUDGE},
}


def first_cell(row: str) -> str:
    return row.split(" | ")[0].removeprefix("| ")


def names_in(cell: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The evaluator names of a first cell — the `code` spans outside parentheses — and its
    aliases: a parenthesis holding nothing but one `code` span, after the name it belongs
    to. Other spans inside parentheses are options (`criteria`, `{question}`)."""
    names: list[str] = []
    aliases: list[tuple[str, str]] = []
    depth, i = 0, 0
    while i < len(cell):
        if cell[i] == "`":
            end = cell.index("`", i + 1)
            span = cell[i + 1 : end]
            if depth == 0:
                names.append(span)
            elif cell[i - 1] == "(" and cell[end + 1 : end + 2] == ")" and names:
                aliases.append((span, names[-1]))
            i = end + 1
            continue
        depth += {"(": 1, ")": -1}.get(cell[i], 0)
        i += 1
    return names, aliases


def readme_tables() -> dict[str, list[str]]:
    """Section title → the first cells of its table's rows (header and rule left out)."""
    tables: dict[str, list[str]] = {}
    for section in re.split(r"^## ", README.read_text("utf-8"), flags=re.M)[1:]:
        title, _, body = section.partition("\n")
        if title.strip() in SECTIONS:
            rows = [line for line in body.splitlines() if line.startswith("| ")]
            tables[title.strip()] = [first_cell(row) for row in rows[1:]]
    return tables


def test_every_section_has_its_table() -> None:
    tables = readme_tables()
    assert set(tables) == set(SECTIONS)
    assert all(tables.values())


@pytest.mark.parametrize("section", list(SECTIONS))
def test_each_table_lists_exactly_the_evaluators_of_its_kind(section: str) -> None:
    listed = [name for cell in readme_tables()[section] for name in names_in(cell)[0]]
    registered = [n for n, c in available().items() if c.requires in SECTIONS[section]]
    assert len(listed) == len(set(listed)), f"listed twice in '## {section}': {listed}"
    unregistered = sorted(set(listed) - set(available()))
    assert not unregistered, f"'## {section}' lists names no evaluator has: {unregistered}"
    misplaced = sorted(n for n in listed if available()[n].requires not in SECTIONS[section])
    assert not misplaced, f"'## {section}' lists evaluators of another section: {misplaced}"
    missing = [n for n in registered if n not in listed]
    assert not missing, f"add a row to the README's '## {section}' table for {missing}"


def test_the_aliases_shown_resolve_to_their_evaluator() -> None:
    aliases = [
        pair for cells in readme_tables().values() for cell in cells for pair in names_in(cell)[1]
    ]
    assert ("Tokens presence", "Text matching") in aliases  # the parser sees them at all
    for alias, name in aliases:
        assert alias in available()[name].aliases and resolve(alias).name == name


def test_the_parser_tells_names_from_options() -> None:
    cell = "`GEval` (options `criteria`, `scale`), `Summarization (judge)`, `A` (`B`)"
    assert names_in(cell) == (["GEval", "Summarization (judge)", "A"], [("B", "A")])
