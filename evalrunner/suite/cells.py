"""How a suite cell is read: text, lists, categories, conditions, conversations and agent
steps, each strict about meaning (a cell that cannot be read is a :class:`CellError`, which the
reader turns into an error naming the sheet, row and column).

Cell rules (also returned by :func:`column_docs` for the template's Instructions sheet):

- text columns (id, question, expected_answer, expected_intent, expected_tool, answer): the
  cell's text with surrounding blanks removed; numbers become text (``42`` -> ``"42"``,
  ``3.0`` -> ``"3"``) because spreadsheet apps store ``42`` typed in a cell as a number; an
  empty cell is "not given" (``None``).
- list columns (expected_contexts, expected_documents, contexts): a JSON array of strings,
  else one item per non-empty line. A cell that starts with ``[`` but is not a JSON array is
  read as lines, because a context chunk may well start with ``[1]``.
- categories: a JSON array, else items split on comma, semicolon or newline.
- condition: a JSON array is the *list form* and is kept as a list. A single item written
  without brackets (``REGEXP:^No$`` or a bare ``No``) is a one-item list, as users of the
  list form write it: a cell starting with ``REGEXP:`` or holding no double quote cannot be an
  expression (every expression operand is quoted), so reading it as one could only fail.
  Anything else is the *expression form* and is kept as the string (it is not evaluated here:
  the Text matching evaluator owns that grammar). A cell starting with ``[`` that is not
  valid JSON is an error, since it is almost certainly a list form with a typo, and reading
  it as an expression would make the case fail for a reason nobody wrote.
- conversation: a JSON array of ``{"role", "content"}`` objects, or lines
  ``user: ...`` / ``assistant: ...`` / ``system: ...``; a line without a role prefix continues
  the previous turn.
- an empty cell or empty string is ``None`` for text and ``[]`` for lists; so is a cell
  holding only ``NA``, ``N/A``, ``n/a`` or ``-`` (:data:`NOT_GIVEN`), the way evaluation
  sheets mark what does not apply to a row.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable
from typing import Any, Final

from evalrunner.input_limits import MAX_JSON_DEPTH, json_too_deep

#: Cells that mean "not given", as evaluation sheets write it (compared case-insensitively
#: after trimming): scored as missing, so the case is skipped for that metric, never 0.
NOT_GIVEN: Final[frozenset[str]] = frozenset({"na", "n/a", "-"})
_ROLES: Final[tuple[str, ...]] = ("user", "assistant", "system")
#: The list form's regex item prefix (case-insensitive), which no expression starts with.
_REGEXP_ITEM: Final[str] = "regexp:"

_ROLE_LINE = re.compile(r"^\s*(user|assistant|system)\s*:\s?(.*)$", re.IGNORECASE)


class CellError(ValueError):
    """A cell's value cannot be read; the reader adds sheet, row and column to the message."""


def _is_empty(value: object) -> bool:
    return value is None or (
        isinstance(value, str) and (not value.strip() or value.strip().casefold() in NOT_GIVEN)
    )


def parse_text(value: object) -> str | None:
    """A text cell: stripped text, numbers as text, empty as ``None``.

    Integral floats lose their ``.0`` because spreadsheet apps store every number as a float
    and an id typed as ``7`` must not become ``"7.0"``.
    """
    if isinstance(value, str):  # nearly every cell: stripped once here, not once per check
        text = value.strip()
        return None if not text or text.casefold() in NOT_GIVEN else text
    if value is None:
        return None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    raise CellError(f"expected text, got {type(value).__name__} {_short(value)}")


def _strings(items: list[Any]) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, dict | list) or item is None:
            raise CellError(f"expected a list of strings, found the item {_short(item)}")
        text = parse_text(item)
        if text is not None:
            out.append(text)
    return out


def _loads(text: str) -> Any:
    """``json.loads`` for a cell, with nesting past :data:`MAX_JSON_DEPTH` a ``ValueError``
    like any other invalid JSON. The json module has no depth limit: it recurses per level
    until Python's recursion limit (``RecursionError``, a traceback); an xlsx cell of 32,767
    ``[`` gets there, and one just short of it breaks the code that walks the value next."""
    try:
        parsed = json.loads(text)
    except RecursionError:
        parsed = None
        deep = True
    else:
        deep = json_too_deep(parsed)
    if deep:
        raise ValueError(f"it nests more than {MAX_JSON_DEPTH} levels deep")
    return parsed


def _json_array(text: str) -> list[Any] | None:
    """The cell as a JSON array, or ``None`` when it is not one."""
    if not text.startswith("["):
        return None
    try:
        parsed = _loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, list) else None


def _json_items(value: object, what: str, example: str) -> list[Any]:
    """A cell that must be a JSON array (or a list a JSON suite gave): its items, else an
    error saying what the array holds, with an example."""
    if isinstance(value, list | tuple):
        return list(value)
    text = parse_text(value)
    assert text is not None
    try:
        items = _loads(text)
    except ValueError as exc:
        raise CellError(f"is not valid JSON ({exc}); write {what} as e.g. {example}") from None
    if not isinstance(items, list):
        raise CellError(f"must be a JSON array of {what}, e.g. {example}")
    return items


def _list_cell(value: object, split: Callable[[str], list[str]]) -> list[str]:
    """A JSON array of strings (or a list a JSON suite gave), else the text cut by ``split``."""
    if _is_empty(value):
        return []
    if isinstance(value, list | tuple):
        return _strings(list(value))
    text = parse_text(value)
    assert text is not None
    parsed = _json_array(text)
    if parsed is not None:
        return _strings(parsed)
    return [part.strip() for part in split(text) if part.strip()]


def parse_list(value: object) -> list[str]:
    """A list cell: a JSON array of strings, else one item per non-empty line."""
    return _list_cell(value, str.splitlines)


def parse_steps(value: object) -> list[dict[str, Any]]:
    """Expected agent steps: a JSON array of tool names or ``{"name", "arguments"}`` objects
    (plain dicts: the reader validates them into the model, naming the cell)."""
    if _is_empty(value):
        return []
    example = '["hr/search", {"name": "hr/book", "arguments": {"days": 2}}]'
    items = _json_items(value, "tool names or step objects", example)
    steps = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, str) and item.strip():
            steps.append({"name": item.strip()})
        elif isinstance(item, dict) and str(item.get("name") or "").strip():
            arguments = item.get("arguments")
            if arguments is not None and not isinstance(arguments, dict):
                raise CellError(f"step {position}: arguments must be a JSON object, e.g. {example}")
            steps.append({k: v for k, v in item.items() if k in ("name", "kind", "arguments")})
        else:
            raise CellError(f"step {position} has no name; write e.g. {example}")
    return steps


def parse_logged_steps(value: object) -> list[dict[str, Any]] | None:
    """What an agent did, as a system logged it (``actual_steps``): a JSON array of tool
    names or step objects (``kind``: tool, knowledge_base or collaborator; ``name``;
    ``arguments``; ``output``; ``failed``; ``error``). Plain dicts: the reader validates them
    into :class:`~evalrunner.targets.steps.AgentStep`, naming the cell. Empty: not logged."""
    if _is_empty(value):
        return None
    example = '["hr/search", {"kind": "knowledge_base", "name": "KB1", "arguments": {}}]'
    items = _json_items(value, "tool names or step objects", example)
    keys = ("kind", "name", "arguments", "output", "failed", "error")
    steps = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, str) and item.strip():
            steps.append({"name": item.strip()})
        elif isinstance(item, dict) and str(item.get("name") or "").strip():
            if item.get("arguments") is not None and not isinstance(item["arguments"], dict):
                raise CellError(f"step {position}: arguments must be a JSON object, e.g. {example}")
            if item.get("kind", "tool") not in ("tool", "knowledge_base", "collaborator"):
                raise CellError(
                    f"step {position}: kind must be tool, knowledge_base or collaborator"
                )
            steps.append({k: v for k, v in item.items() if k in keys and v is not None})
        else:
            raise CellError(f"step {position} has no name; write e.g. {example}")
    return steps


def parse_categories(value: object) -> list[str]:
    """Categories: a JSON array, else split on comma, semicolon or newline."""
    return _list_cell(value, lambda text: re.split(r"[,;\n]", text))


def _condition_items(items: list[Any], path: str = "") -> list[Any]:
    """Check the list form: strings and nested lists of strings (numbers become strings)."""
    out: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, list):
            out.append(_condition_items(item, f"{path}[{i}]"))
        elif isinstance(item, str):
            out.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            out.append(parse_text(item))
        else:
            raise CellError(
                f"the condition list may hold only strings and nested lists; item "
                f"{path}[{i}] is {_short(item)}"
            )
    return out


def parse_condition(value: object) -> str | list[Any] | None:
    """A condition: list form (JSON array, kept as a list) or expression (kept as a string).

    Not evaluated here; only a cell that starts with ``[`` yet is not valid JSON is refused.
    """
    if _is_empty(value):
        return None
    if isinstance(value, list | tuple):
        items = _condition_items(list(value))
        return items or None
    text = parse_text(value)
    assert text is not None
    if text.startswith("["):
        try:
            parsed = _loads(text)
        except ValueError as exc:
            raise CellError(
                f"starts with '[' but is not a valid JSON array ({exc}); write the list form "
                'as JSON, e.g. ["15,969", ["Brazil", "BRAZIL"]], or write an expression '
                'such as "15,969" AND ("Brazil" OR "BRAZIL")'
            ) from None
        if not isinstance(parsed, list):
            raise CellError("starts with '[' but is not a JSON array")
        items = _condition_items(parsed)
        return items or None
    if text[: len(_REGEXP_ITEM)].lower() == _REGEXP_ITEM or '"' not in text:
        return [text]
    return text


def _turn(item: object, position: int) -> dict[str, str]:
    if not isinstance(item, dict):
        raise CellError(
            f'conversation item {position} is not an object like {{"role": "user", '
            f'"content": "..."}}: {_short(item)}'
        )
    role = str(item.get("role", "")).strip().lower()
    if role not in _ROLES:
        raise CellError(
            f"conversation item {position} has role {item.get('role')!r}; "
            f"use one of {', '.join(_ROLES)}"
        )
    content = item.get("content")
    if not isinstance(content, str):
        raise CellError(f"conversation item {position} has no text 'content'")
    return {"role": role, "content": content}


def parse_conversation(value: object) -> list[dict[str, str]]:
    """Prior turns: a JSON array of ``{role, content}``, or ``user: ...`` lines.

    Returns plain dicts (the reader builds :class:`~evalrunner.suite.model.Turn` from them)
    so this module does not depend on the model's construction rules.
    """
    if _is_empty(value):
        return []
    if isinstance(value, list | tuple):
        return [_turn(item, i + 1) for i, item in enumerate(value)]
    text = parse_text(value)
    assert text is not None
    if text.startswith("["):
        try:
            parsed = _loads(text)
        except ValueError as exc:
            raise CellError(
                f"starts with '[' but is not a valid JSON array ({exc}); write "
                '[{"role": "user", "content": "..."}, ...] or lines "user: ..." / '
                '"assistant: ..."'
            ) from None
        if not isinstance(parsed, list):
            raise CellError("starts with '[' but is not a JSON array")
        return [_turn(item, i + 1) for i, item in enumerate(parsed)]
    turns: list[dict[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _ROLE_LINE.match(line)
        if match:
            turns.append({"role": match.group(1).lower(), "content": match.group(2).strip()})
        elif turns:
            turns[-1]["content"] = f"{turns[-1]['content']}\n{line}".strip()
        elif line.strip():
            raise CellError(
                f"line {number} does not start with 'user:', 'assistant:' or 'system:'; "
                "each turn is a line like 'user: I want to book leave.'"
            )
    return turns


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_turn_number(value: object) -> int | None:
    """A turn number: a whole number from 1 (``3``, ``3.0`` or ``"3"``); empty is ``None``."""
    text = parse_text(value)
    if text is None:
        return None
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise CellError(f"the turn number must be a whole number from 1, found {_short(value)}")
    return number


def parse_scripted_turns(value: object) -> list[dict[str, Any]]:
    """A ``turns`` cell: a JSON array of objects, one per turn (``{"user": ..., ...}``), as
    plain dicts; the reader maps their keys like a row's headers and names the item in errors."""
    if _is_empty(value):
        return []
    example = (
        '[{"user": "My name is Ana."}, {"user": "What is my name?", "expected_answer": "Ana"}]'
    )
    items = _json_items(value, "turns", example)
    if not items:
        raise CellError(f"must be a non-empty JSON array of turns, e.g. {example}")
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise CellError(
                f'turn {position} is not an object like {{"user": "...", '
                f'"expected_answer": "..."}}: {_short(item)}'
            )
    return [dict(item) for item in items]


def is_prior_turns(value: object) -> bool:
    """Whether a ``turns`` cell holds ``{"role", "content"}`` items: the earlier-turns form
    that ``turns`` named before it named scripted turns, still read as the conversation
    column so such suites keep working."""
    items: Any = value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            items = _loads(value)
        except ValueError:
            return False
    elif isinstance(value, str):
        return bool(_ROLE_LINE.match(value))
    return (
        isinstance(items, list | tuple)
        and bool(items)
        and all(isinstance(i, dict) and "role" in i and "content" in i for i in items)
    )
