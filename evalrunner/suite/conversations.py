"""Scripted conversations in a suite: rows grouped by ``conversation_id`` (one row per turn,
ordered by ``turn`` or by row order), or one row with a ``turns`` cell (a JSON array of turns).

Either way the reader yields one :class:`~evalrunner.suite.model.TestCase` per conversation
whose ``turns`` are cases of their own (the user's message as the question, that turn's
expectations), so a turn is scored exactly like a single-turn case. Every mistake names the
row and the column, because a conversation built from the wrong rows would be scored for
turns nobody wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from evalrunner.errors import SuiteError
from evalrunner.suite.cells import CellError, parse_scripted_turns, parse_text
from evalrunner.suite.columns import canonical_column, map_headers
from evalrunner.suite.model import TestCase
from evalrunner.suite.rows import Row, metadata_value

#: The most turns one conversation may have: each turn is a target call made one after the
#: other inside one run_case task, which has to finish within the Lambda's 15 minutes.
MAX_TURNS: Final = 50
#: The metadata key (a ``role`` column) that holds the role the assistant must keep.
ROLE_KEY: Final = "role"
#: Columns that describe a whole conversation, not one of its turns: allowed beside a
#: ``turns`` cell (every other column belongs inside the turns).
_CONVERSATION_COLUMNS: Final = frozenset(
    {"id", "conversation_id", "categories", "conversation", "turns"}
)

#: ``error(i, column, message)``: the SuiteError naming row i's cell.
CellErrorFactory = Callable[[int, str, str], SuiteError]
#: Builds a case from a row (the reader's own builder, so turns follow the same cell rules).
CaseBuilder = Callable[[Row, int, str], TestCase]


def turn_id(conversation_id: str, turn: int) -> str:
    """A turn's case id: the conversation's id and the turn's number (``onboarding#2``)."""
    return f"{conversation_id}#{turn}"


def conversation_from_cell(row: Row, index: int, source: str, build: CaseBuilder) -> TestCase:
    """The conversation a row's ``turns`` cell holds. The row's own cells name it (``id``,
    else ``conversation_id``), label it (categories) and give the fixed turns before it
    (conversation); each turn object is read like a row of its own."""
    label = row.labels.get("turns", "turns")

    def fail(column: str, message: str) -> SuiteError:
        return row.error(column, message, source)

    try:
        items = parse_scripted_turns(row.values.get("turns"))
    except CellError as exc:
        raise fail("turns", str(exc)) from None
    for column, value in row.values.items():
        if column not in _CONVERSATION_COLUMNS and parse_text_or_any(value) is not None:
            raise fail(
                column,
                f"this row's {label} cell holds a whole conversation, so {column} belongs "
                f"inside each turn (a key of the turn object); leave this cell empty",
            )
    if len(items) > MAX_TURNS:
        raise fail("turns", f"has {len(items)} turns; a conversation may have {MAX_TURNS}")
    head = build(
        Row(
            row=row.row,
            values={**row.values, "question": "(conversation)", "turns": None},
            labels=row.labels,
            cells=row.cells,
            metadata=row.metadata,
            sheet=row.sheet,
            where=row.where,
        ),
        index,
        source,
    )
    named = parse_text_or_any(row.values.get("id")) is not None
    cid = head.case_id if named else (head.conversation_id or head.case_id)
    turns = []
    for i, item in enumerate(items):
        turn_row = _turn_row(row, item, f"{label}[{i}]", source)
        turns.append(build(turn_row, index, source).model_copy(update={"turn": i + 1}))
    return _conversation(cid, head, turns, head.metadata.get(ROLE_KEY))


def parse_text_or_any(value: object) -> object:
    """The cell's value when it holds something (lists and objects count), else None."""
    if isinstance(value, list | tuple | dict):
        return value or None
    try:
        return parse_text(value)
    except CellError:
        return value


def _turn_row(row: Row, item: dict[str, Any], where: str, source: str) -> Row:
    """One turn object as a row: ``user`` is its question; other keys map like headers."""
    item = dict(item)
    if "user" in item:
        clash = next((k for k in item if canonical_column(k) == "question"), None)
        if clash is not None:
            raise SuiteError(
                f"{where} has both 'user' and '{clash}'; the user's message is one of them",
                source=source,
                sheet=row.sheet,
                row=row.row,
            )
        item = {"question": item.pop("user"), **item}
    keys = [str(k) for k in item]
    place = f"{row.where}.{where}" if row.where else where
    if not any(canonical_column(k) == "question" for k in keys):
        raise SuiteError(
            f"{place} has no user message; each turn is an object like "
            '{"user": "What is my name?", "expected_answer": "Ana"}',
            source=source,
            sheet=row.sheet,
            row=row.row,
            column=row.labels.get("turns", "turns"),
        )
    hmap = map_headers(
        keys, source=source, sheet=row.sheet, row=row.row, letters=False, noun="keys", note=place
    )
    for canonical in hmap.columns:
        if canonical in _CONVERSATION_COLUMNS | {"turn", "actual_answer", "variant_of"}:
            raise SuiteError(
                f"{place} has the key '{keys[hmap.columns[canonical]]}', which a turn cannot "
                "have (ids, fixed earlier turns and categories of the whole conversation go in "
                "the row's own cells; logged answers and variants are for single-turn cases)",
                source=source,
                sheet=row.sheet,
                row=row.row,
            )
    cell = row.cells.get("turns")
    return Row(
        row=row.row,
        values={c: item[keys[p]] for c, p in hmap.columns.items()},
        labels={c: f"{where}.{keys[p]}" for c, p in hmap.columns.items()},
        cells=dict.fromkeys(hmap.columns, cell) if cell else {},
        metadata={name: metadata_value(item[keys[p]]) for p, name in hmap.extras.items()},
        sheet=row.sheet,
        where=place,
    )


def group_conversations(
    cases: Sequence[TestCase], rows: Sequence[Row], error: CellErrorFactory, source: str
) -> list[TestCase]:
    """``cases`` (one per row, in row order) with the rows of each conversation_id folded
    into one conversation, placed where its first row was; indexes renumbered."""
    groups: dict[str, list[int]] = {}
    order: list[str | TestCase] = []
    last: str | None = None
    for i, case in enumerate(cases):
        cid = None if case.is_conversation else case.conversation_id
        if cid is None:
            if case.turn is not None and not case.is_conversation:
                raise error(
                    i,
                    "turn",
                    "this row has a turn number but no conversation_id; give the "
                    "conversation_id of the conversation it belongs to, or clear the turn",
                )
            order.append(case)
            last = None
            continue
        if cid in groups and last != cid:
            before = rows[groups[cid][-1]].row
            raise error(
                i,
                "conversation_id",
                f"conversation '{cid}' continues here after other rows (its previous row is "
                f"row {before}); keep the rows of a conversation together, one under the other",
            )
        if parse_text_or_any(rows[i].values.get("id")) is not None:
            raise error(
                i,
                "id",
                f"a turn of conversation '{cid}' has its own id; turns are named from the "
                f"conversation ({turn_id(cid, 1)}, {turn_id(cid, 2)}, ...): leave id empty on "
                "the rows of a conversation",
            )
        if cid not in groups:
            groups[cid] = []
            order.append(cid)
        groups[cid].append(i)
        last = cid
    out = [
        entry if isinstance(entry, TestCase) else _from_rows(entry, groups[entry], cases, error)
        for entry in order
    ]
    seen: dict[str, TestCase] = {}
    for case in out:
        other = seen.get(case.case_id)
        if other is not None:
            raise SuiteError(
                f"the id '{case.case_id}' names both the case of row {other.row} and the "
                f"one of row {case.row}; ids and conversation ids must be unique",
                source=source,
                row=case.row,
            )
        seen[case.case_id] = case
    return [_renumbered(case, n) for n, case in enumerate(out)]


def _from_rows(
    cid: str, members: list[int], cases: Sequence[TestCase], error: CellErrorFactory
) -> TestCase:
    numbered = [i for i in members if cases[i].turn is not None]
    if numbered and len(numbered) != len(members):
        i = next(i for i in members if cases[i].turn is None)
        raise error(
            i,
            "turn",
            f"conversation '{cid}' numbers some turns but not this one; number every turn "
            "of a conversation, or none (row order)",
        )
    if len(members) > MAX_TURNS:
        raise error(
            members[MAX_TURNS],
            "conversation_id",
            f"conversation '{cid}' has {len(members)} turns; a conversation may have {MAX_TURNS}",
        )
    taken: dict[int, int] = {}
    role: str | None = None
    role_from = members[0]
    for i in members:
        case = cases[i]
        if case.answer is not None:
            raise error(
                i,
                "actual_answer",
                "a turn of a conversation cannot carry a logged answer: conversations are "
                "played live against the target, each turn after the target's own answers",
            )
        if case.perturbation is not None:
            raise error(i, "variant_of", "a turn of a conversation cannot be a variant")
        if case.turn is not None:
            if case.turn in taken:
                raise error(
                    i,
                    "turn",
                    f"turn {case.turn} of conversation '{cid}' is also row "
                    f"{cases[taken[case.turn]].row}; each turn number once per conversation",
                )
            taken[case.turn] = i
        mine = case.metadata.get(ROLE_KEY)
        if mine not in (None, ""):
            if role is not None and str(mine) != role:
                raise error(
                    i,
                    ROLE_KEY,
                    f"conversation '{cid}' has the role {role!r} on row {cases[role_from].row} "
                    f"and {str(mine)!r} here; give its role once (or the same on every row)",
                )
            role, role_from = str(mine), i
    ordered = sorted(members, key=lambda i: cases[i].turn or 0) if numbered else list(members)
    for i in ordered[1:]:
        if cases[i].conversation:
            raise error(
                i,
                "conversation",
                "fixed earlier turns come before the conversation: give them on its first "
                "turn only",
            )
    turns = [
        cases[i].model_copy(update={"turn": cases[i].turn or n})
        for n, i in enumerate(ordered, start=1)
    ]
    head = cases[members[0]].model_copy(update={"conversation": cases[ordered[0]].conversation})
    return _conversation(cid, head, turns, role)


def _conversation(cid: str, head: TestCase, turns: list[TestCase], role: str | None) -> TestCase:
    """The conversation case: named ``cid``, labelled with every turn's categories, its
    metadata the first row's with the conversation's role."""
    metadata = dict(head.metadata)
    if role is not None:
        metadata[ROLE_KEY] = role
    categories = list(dict.fromkeys(c for t in [head, *turns] for c in t.categories))
    notes = list(dict.fromkeys(n for t in [head, *turns] for n in t.notes))
    named = [
        t.model_copy(
            update={
                "case_id": turn_id(cid, t.turn or n),
                "conversation_id": cid,
                "conversation": [],
            }
        )
        for n, t in enumerate(turns, start=1)
    ]
    return TestCase(
        index=head.index,
        case_id=cid,
        row=head.row,
        question=turns[0].question,
        categories=categories,
        conversation=list(head.conversation),
        metadata=metadata,
        notes=notes,
        conversation_id=cid,
        turns=named,
    )


def _renumbered(case: TestCase, index: int) -> TestCase:
    if case.index == index and all(t.index == index for t in case.turns):
        return case
    turns = [t.model_copy(update={"index": index}) for t in case.turns]
    return case.model_copy(update={"index": index, "turns": turns})
