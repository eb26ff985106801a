"""The suite's canonical columns, the header aliases each accepts, and what each column means.

Suites are written by people in spreadsheets exported from other tools, so the readers are
tolerant about *headers* (``Expected Answer``, ``expected-answer`` and ``Ground Truth`` all
name the same column) but strict about *meaning*: two headers that name the same column, or a
cell that cannot be read, are errors that name the cell, never a silent guess.

How a cell is read is :mod:`evalrunner.suite.cells`; the rules are returned by
:func:`column_docs` for the template's Instructions sheet too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from xlsxwriter.utility import xl_col_to_name

from evalrunner.errors import SuiteError


def column_letter(number: int) -> str:
    """The spreadsheet letters of the 1-based column ``number`` (1 is ``A``, 27 ``AA``), as
    openpyxl's ``get_column_letter`` writes them. XlsxWriter's (0-based) is used because
    importing any part of openpyxl runs its ``__init__``, which builds the whole workbook model
    and imports numpy (~0.3 s), and CSV and JSON suites, read on every run, need no workbook."""
    return str(xl_col_to_name(number - 1))


#: Canonical columns in template order.
CANONICAL_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "question",
    "expected_answer",
    "expected_contexts",
    "expected_documents",
    "expected_intent",
    "expected_tool",
    "expected_tools",
    "expected_steps",
    "condition",
    "categories",
    "conversation",
    "conversation_id",
    "turn",
    "turns",
    "expected_data",
    "actual_answer",
    "retrieved_contexts",
    "variant_of",
    "variant_kind",
    "retrieved_documents",
    "actual_intent",
    "actual_tool",
    "retrieved_data",
    "actual_steps",
)

#: Accepted (normalised) header names per canonical column; the canonical name comes first.
ALIASES: Final[dict[str, tuple[str, ...]]] = {
    "id": ("id", "case_id", "test_id", "key"),
    "question": ("question", "input", "user_input", "prompt", "query"),
    "expected_answer": (
        "expected_answer",
        "expected_output",
        "ground_truth",
        "answer_ground_truth",
        "reference",
        "expected",
    ),
    "expected_contexts": (
        "expected_contexts",
        "ground_truth_contexts",
        "reference_contexts",
        "expected_context",
        "context",
        # The HR-assistant evaluation sheet's names (``*_ground_truth``) for each column.
        "retrieved_chunk_ground_truth",
    ),
    "expected_intent": ("expected_intent", "intent", "classified_intent_ground_truth"),
    "expected_tool": ("expected_tool", "tool", "selected_tool_ground_truth"),
    "expected_documents": (
        "expected_documents",
        "documents",
        "expected_sources",
        "retrieved_document_ground_truth",
    ),
    "expected_tools": ("expected_tools", "expected_tool_calls", "tools_expected"),
    "expected_steps": ("expected_steps", "expected_trajectory", "reference_steps"),
    # "constraints" is the H2O Eval Studio name of the list form.
    "condition": ("condition", "conditions", "constraint", "constraints"),
    "categories": ("categories", "category", "tags"),
    "conversation": ("conversation", "history"),
    # A scripted conversation, one row per turn (conversation_id, turn) or one turns cell.
    "conversation_id": ("conversation_id", "dialog_id", "dialogue_id", "conversation_key"),
    "turn": ("turn", "turn_number", "turn_index"),
    "turns": ("turns", "scripted_turns"),
    # Pre-computed answers skip the target call, so only explicit headers count: a sheet
    # headed "Question | Answer" means the expected answer far more often than not.
    "expected_data": ("expected_data", "retrieved_data_ground_truth"),
    # What the system logged (``*_by_system``): with the answer given, the case is scored
    # from these instead of calling a target.
    "actual_answer": ("actual_answer", "actual_output", "generated_answer", "answer_from_system"),
    "retrieved_contexts": (
        "retrieved_contexts",
        "actual_contexts",
        "retrieval_context",
        "retrieved_chunk_by_system",
    ),
    "retrieved_documents": ("retrieved_documents", "retrieved_document_by_system"),
    "actual_intent": ("actual_intent", "classified_intent_by_system"),
    "actual_tool": ("actual_tool", "selected_tool_by_system"),
    "retrieved_data": ("retrieved_data", "retrieved_data_by_system"),
    "actual_steps": ("actual_steps", "steps_by_system", "logged_steps"),
    "variant_of": ("variant_of", "paraphrase_of"),
    "variant_kind": ("variant_kind", "variant_name"),
}

TEXT_COLUMNS: Final[frozenset[str]] = frozenset(
    {
        "id",
        "question",
        "expected_answer",
        "expected_intent",
        "expected_tool",
        "expected_data",
        "actual_answer",
        "actual_intent",
        "actual_tool",
        "retrieved_data",
        "variant_of",
        "variant_kind",
        "conversation_id",
    }
)
LIST_COLUMNS: Final[frozenset[str]] = frozenset(
    {
        "expected_contexts",
        "expected_documents",
        "expected_tools",
        "retrieved_contexts",
        "retrieved_documents",
    }
)

_ALIAS_TO_CANONICAL: Final[dict[str, str]] = {
    alias: canonical for canonical, aliases in ALIASES.items() for alias in aliases
}


def normalise_header(header: object) -> str:
    """Fold a header to its comparable form: ``" Expected-Answer "`` -> ``"expected_answer"``.

    Case, surrounding blanks, spaces and dashes are how hand-made headers usually differ
    from ours; anything beyond that is left alone so that an unknown header stays visible as
    metadata rather than being matched by a guess.
    """
    if header is None:
        return ""
    text = str(header).strip().lower()
    return re.sub(r"[\s\-_]+", "_", text).strip("_")


def canonical_column(header: object) -> str | None:
    """The canonical column a header names, or ``None`` when it is not one of ours."""
    return _ALIAS_TO_CANONICAL.get(normalise_header(header))


def look_alike(header: object) -> tuple[str, str] | None:
    """``(column, why)`` when ``header`` is not one of ours as written but would be without
    an invisible character (``expected\u200b_answer``) or with plain letters in place of its
    non-ASCII ones (``quеstion`` with a Cyrillic е, fullwidth ``ｑｕｅｓｔｉｏｎ``); else None.

    Such a header is no metadata column the author meant: it is one of ours, mistyped in a
    way nobody can see, and reading it as metadata would leave that column empty (expected
    answers gone, their metrics skipped) with no error. The rule needs no table of
    look-alikes: a non-ASCII character stands for whichever letter the column's name has
    there, so any letter that merely looks like the right one is caught."""
    written = "" if header is None else str(header)
    if written.isascii():
        return None
    invisible = [c for c in written if unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp")]
    if invisible:
        visible = "".join(c for c in written if c not in invisible)
        column = canonical_column(visible) or _shape_match(visible)
        if column is not None:
            names = ", ".join(sorted({_char_name(c) for c in invisible}))
            return column, f"it holds an invisible character ({names}); delete it"
        return None
    column = canonical_column(unicodedata.normalize("NFKC", written)) or _shape_match(written)
    if column is None:
        return None
    odd = sorted({c for c in written if not c.isascii()})
    names = ", ".join(f"'{c}' ({_char_name(c)})" for c in odd[:3])
    if len(odd) > 3:
        names += f" and {len(odd) - 3} more"
    return column, f"{names} only looks like a plain letter; retype it"


def _shape_match(written: str) -> str | None:
    """The column whose header ``written`` is, letter for letter, where a non-ASCII letter
    may stand for the letter in that place: at most one letter in three (a header in another
    script altogether, ``категория``, is a metadata column, not a mistyped one)."""
    folded = normalise_header(written)
    odd = sum(not c.isascii() for c in folded)
    if not odd or odd * 3 > len(folded) or not all(c.isalpha() or c.isascii() for c in folded):
        return None
    for alias, column in _ALIAS_TO_CANONICAL.items():
        if len(alias) == len(folded) and all(
            a == f or not f.isascii() for a, f in zip(alias, folded, strict=True)
        ):
            return column
    return None


def _char_name(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"


def visible_header(header: str) -> str:
    """``header`` with its invisible characters shown as escapes, for messages."""
    return "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") else c
        for c in header
    )


def accepted_headers(column: str) -> str:
    """Human-readable list of the headers accepted for ``column``, for error messages."""
    return ", ".join(ALIASES[column])


@dataclass(frozen=True)
class HeaderMap:
    """Where each canonical column sits in a header row, and what the other headers are.

    ``columns`` maps canonical name -> 0-based position; ``extras`` maps position -> the
    header as written (kept as the metadata key); ``labels`` maps position -> the header as
    written for every non-blank header, used to name the column in error messages.
    """

    columns: dict[str, int]
    extras: dict[int, str]
    labels: dict[int, str]
    width: int


def map_headers(
    headers: Sequence[object],
    *,
    source: str,
    sheet: str | None = None,
    row: int | None = None,
    letters: bool = True,
    noun: str = "headers",
    note: str | None = None,
) -> HeaderMap:
    """Map a header row to canonical columns.

    Raises :class:`SuiteError` when two headers name the same column (the case cannot know
    which one the author meant) and when no header names the question, listing what was
    found and what is accepted so the fix is one edit away. ``letters`` adds spreadsheet
    column letters to messages; ``noun`` ("headers", or "keys" for JSON objects) and
    ``note`` (appended in parentheses, e.g. a JSON path) adapt them to the source.
    """
    tail = f" ({note})" if note else ""
    columns: dict[str, int] = {}
    extras: dict[int, str] = {}
    labels: dict[int, str] = {}
    for pos, header in enumerate(headers):
        written = "" if header is None else str(header).strip()
        if not written:
            continue
        labels[pos] = written
        canonical = canonical_column(written)
        if canonical is None:
            mistyped = look_alike(written)
            if mistyped is not None:
                column, why = mistyped
                cell = f" (column {column_letter(pos + 1)})" if letters else ""
                raise SuiteError(
                    f"{noun[:-1]} '{visible_header(written)}'{cell} looks like "
                    f"'{column}' but is not: {why}, or the column's cells would be read as "
                    f"metadata and '{column}' left empty{tail}",
                    source=source,
                    sheet=sheet,
                    row=row,
                )
            extras[pos] = written
            continue
        if canonical in columns:
            first = columns[canonical]
            where = (
                f" (columns {column_letter(first + 1)} and {column_letter(pos + 1)})"
                if letters
                else ""
            )
            raise SuiteError(
                f"{noun} '{labels[first]}' and '{written}' both name the column "
                f"'{canonical}'{where}; keep one of them or rename the other{tail}",
                source=source,
                sheet=sheet,
                row=row,
            )
        columns[canonical] = pos
    if "question" not in columns and "turns" not in columns:
        found = ", ".join(f"'{h}'" for h in labels.values()) or "none"
        raise SuiteError(
            f"no question column: {noun} found: {found}; the question column may be "
            f"named {accepted_headers('question')} (case, spaces and dashes do not "
            f"matter){tail}",
            source=source,
            sheet=sheet,
            row=row,
        )
    return HeaderMap(columns=columns, extras=extras, labels=labels, width=len(headers))


# --------------------------------------------------------------------------- cell parsing


# ------------------------------------------------------------------- column documentation


@dataclass(frozen=True)
class ColumnDoc:
    """What a column means and how its cells are written; rendered on the Instructions sheet."""

    name: str
    aliases: tuple[str, ...]
    required: bool
    description: str
    cell_format: str
    example: str


_LIST_FORMAT = 'A JSON array of strings, e.g. ["chunk one", "chunk two"], or one item per line.'

_DOCS: Final[dict[str, tuple[str, str, str]]] = {
    "id": (
        "Stable identifier of the case, used to compare runs. Must be unique.",
        "Text. Empty: case-0001, case-0002, ... by position.",
        "leave-001",
    ),
    "question": (
        "The question or instruction sent to the target. The only required column.",
        "Text. Must not be empty.",
        "How many days of annual leave do I get?",
    ),
    "expected_answer": (
        "The reference answer the actual answer is compared with.",
        "Text.",
        "Full-time employees get 25 days of paid annual leave.",
    ),
    "expected_contexts": (
        "Passages the retriever should return (retrieval ground truth).",
        _LIST_FORMAT,
        '["Full-time employees are entitled to 25 days ..."]',
    ),
    "expected_documents": (
        "Documents (names, ids or URLs) the answer should be drawn from; used for ranks.",
        _LIST_FORMAT,
        '["leave-policy.md"]',
    ),
    "expected_tools": (
        "Agents: the tools the agent should call, in order (Tool correctness; Bedrock action "
        "groups as group/function).",
        _LIST_FORMAT,
        '["hr/get_leave_balance"]',
    ),
    "expected_steps": (
        "Agents: the steps the agent should take, in order, with the arguments each call "
        "should get (Argument correctness, Step alignment & completeness).",
        'JSON array of tool names or {"name": ..., "arguments": {...}} objects.',
        '[{"name": "hr/get_balance", "arguments": {"employee_id": "E42"}}]',
    ),
    "expected_intent": (
        "The intent label the agent should classify the question as.",
        "Text.",
        "leave_policy",
    ),
    "expected_tool": ("The tool the agent should call.", "Text.", "search_policies"),
    "condition": (
        "Text-matching constraints the answer must satisfy.",
        "List form: a JSON array; every item must hold, a string must be contained, "
        "REGEXP:pattern must match, a nested list holds if any item holds. Or an "
        'expression: "text", regexp("pattern"), AND, OR, NOT, parentheses. A single '
        "item without brackets (REGEXP:^No$ or a bare word) is a one-item list.",
        '"25" AND ("days" OR "day")   or   ["25", ["days", "day"]]',
    ),
    "categories": (
        "Labels to group results by (e.g. topic, jailbreak, unsafe).",
        "A JSON array, or items separated by comma, semicolon or newline.",
        "hr, leave",
    ),
    "conversation": (
        "Earlier turns of a multi-turn conversation, sent before the question.",
        'A JSON array of {"role": "user"|"assistant"|"system", "content": "..."}, or one '
        'turn per line: "user: ..." / "assistant: ...".',
        "user: I want to take leave.\nassistant: How many days?",
    ),
    "conversation_id": (
        "A scripted conversation, one row per turn: rows with the same id are the turns of "
        "one conversation, sent one after the other with the target's actual earlier answers; "
        "each row's question is the user's turn, its expected_answer (and other expected_* "
        "columns, condition, categories) that turn's expectation. A role column, if any, is "
        "the role the assistant must keep (Role adherence). Keep a conversation's rows "
        "together; at most 50 turns.",
        "Text. Empty: a single-turn case.",
        "onboarding-1",
    ),
    "turn": (
        "With conversation_id: the turn's number, to order the turns (else row order).",
        "A whole number from 1, unique within the conversation; give all or none.",
        "1",
    ),
    "turns": (
        "A whole scripted conversation in one cell (JSON suites, CSV): its turns in order, "
        "each the user's message and that turn's expectations. Leave question empty.",
        'A JSON array of {"user": "...", "expected_answer": "..."} objects (any expected_* '
        "column, condition or categories may be a key too).",
        '[{"user": "My name is Ana."}, {"user": "What is my name?", "expected_answer": "Ana"}]',
    ),
    "expected_data": (
        "The data (a record, a number, a JSON value) the system should have retrieved; "
        "compared exactly with retrieved_data.",
        "Text (JSON is compared as JSON).",
        '{"leave_balance": 12}',
    ),
    "actual_answer": (
        "Only for answers computed elsewhere: the actual answer. When given, the target is "
        "not called for this case. Leave empty otherwise.",
        "Text.",
        "",
    ),
    "retrieved_contexts": (
        "With a pre-computed answer: the contexts actually retrieved. Without one: the "
        "context a generation target is sent (target.openai.send_contexts, "
        "target.contexts_field).",
        _LIST_FORMAT,
        "",
    ),
    "variant_of": (
        "Robustness: this row is a hand-written variant (a rephrasing, a typo) of the case "
        "with this id; the report shows the verdicts that flipped against it.",
        "Text: the id of another row of the suite, which is not a variant itself.",
        "",
    ),
    "variant_kind": (
        "With variant_of: the label the robustness analysis groups the variant under "
        "(antonym: the variant must change the answer).",
        "Text. Empty: variant.",
        "",
    ),
    "retrieved_documents": (
        "Only with a pre-computed answer: the documents actually retrieved, best first.",
        _LIST_FORMAT,
        "",
    ),
    "actual_intent": ("Only with a pre-computed answer: the intent logged.", "Text.", ""),
    "actual_tool": ("Only with a pre-computed answer: the tool logged.", "Text.", ""),
    "retrieved_data": ("Only with a pre-computed answer: the data retrieved.", "Text.", ""),
    "actual_steps": (
        "Only with a pre-computed answer: what the agent did (tools called, knowledge bases "
        "queried), for the agent metrics.",
        'JSON array of tool names or {"kind", "name", "arguments", "output", "failed"} objects.',
        "",
    ),
}


def column_docs() -> list[ColumnDoc]:
    """Every canonical column with its aliases and cell format, in template order.

    One source for the Instructions sheet and any other help text, so the documentation
    cannot drift from the aliases the readers accept.
    """
    return [
        ColumnDoc(
            name=name,
            aliases=ALIASES[name][1:],
            required=name == "question",
            description=_DOCS[name][0],
            cell_format=_DOCS[name][1],
            example=_DOCS[name][2],
        )
        for name in CANONICAL_COLUMNS
    ]


#: Rules that apply to every column, for the Instructions sheet.
GENERAL_RULES: Final[tuple[str, ...]] = (
    "One row per test case; the first non-empty row of the sheet is the header row.",
    "A conversation is one row per turn with the same conversation_id (rows together, in "
    "turn order or numbered in a turn column); each row's question is the user's turn and "
    "its expected_answer that turn's expectation. Turns are sent one after the other with "
    "the target's actual earlier answers.",
    "Headers are matched ignoring case, surrounding spaces, and spaces vs dashes vs "
    "underscores: 'Expected Answer', 'expected-answer' and 'Ground Truth' all work.",
    "Two headers naming the same column are an error. Unknown columns are kept as case "
    "metadata and appear in details.csv.",
    "The reader uses the first sheet whose header row has a question header, so this "
    "Instructions sheet may stay in the workbook, before or after the data sheet.",
    "Fully blank rows are skipped. Numbers in text columns are read as text.",
    "Formulas are read as the value Excel last saved with the file.",
)
