"""What the Python API accepts as a suite and a target, turned into what the engine takes:
a suite file and an event target.

A suite given as Python objects (a list of dicts, a pandas DataFrame) is written as a JSON
suite and read by the very readers a file goes through, so its cells meet the same checks and
the same messages (row, column, what to do). A callable target becomes a Lambda function the
embedded engine hosts, like the demo assistant: it runs in-process, inside the same state
machine as any other target, with no server.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner.errors import ConfigError, EventError, SuiteError

if TYPE_CHECKING:
    from evalrunner.engine.dispatch import Handler

#: A target given as a Python function: the question in, an answer (and contexts) out.
TargetFunction = Callable[..., Any]

#: Lambda's own rule for function names; the engine hosts the callable under such a name.
_FUNCTION_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def suite_file(suite: Any, folder: Path, name: str) -> Path:
    """The suite as a file the engine reads: a path as it is, Python rows written as
    ``<folder>/<name>.json``."""
    if isinstance(suite, str | Path):
        path = Path(suite)
        if not path.is_file():
            raise SuiteError(
                f"suite: {path} does not exist or is not a file; give an .xlsx, .csv or .json "
                "file, a list of dicts or a pandas DataFrame"
            )
        return path
    rows = _rows(suite)
    if not rows:
        raise SuiteError("suite: no cases; give at least one row with a question")
    path = folder / f"{name}.json"
    try:
        # ASCII with escapes: a lone surrogate (legal in a JSON log's escapes, never in UTF-8)
        # travels as "\\ud800" for the suite reader to replace and note, not crash the write.
        text = json.dumps(rows, ensure_ascii=True, allow_nan=False, default=_cell)
    except ValueError as exc:  # NaN / inf left in a numeric column
        raise SuiteError(f"suite: a cell holds a number JSON cannot carry ({exc})") from None
    path.write_text(text, encoding="utf-8")
    return path


def _rows(suite: Any) -> list[dict[str, Any]]:
    if _is_dataframe(suite):
        records = suite.to_dict(orient="records")
        # pandas fills a missing cell with NaN: an empty cell, as in a spreadsheet
        return [{str(k): _blank_nan(v) for k, v in row.items()} for row in records]
    if isinstance(suite, Mapping) or not isinstance(suite, Sequence) or isinstance(suite, str):
        raise SuiteError(
            f"suite: a {type(suite).__name__} is not a suite; give a file path, a list of dicts "
            '(e.g. [{"question": "...", "expected_answer": "..."}]) or a pandas DataFrame'
        )
    rows = []
    for i, row in enumerate(suite):
        if not isinstance(row, Mapping):
            raise SuiteError(
                f"is a {type(row).__name__}, not a dict with a question",
                source="suite",
                row=i + 1,
            )
        rows.append({str(k): v for k, v in row.items()})
    return rows


def _is_dataframe(value: Any) -> bool:
    # checked by name so that pandas is imported only by those who pass a DataFrame
    return type(value).__name__ == "DataFrame" and hasattr(value, "to_dict")


def _blank_nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _cell(value: Any) -> Any:
    """Cells JSON has no type for (dates, numpy numbers) as the text a spreadsheet shows."""
    if hasattr(value, "item"):  # numpy / pandas scalars
        return value.item()
    return str(value)


def target_spec(target: Any) -> tuple[dict[str, Any], dict[str, Handler]]:
    """The event's target object, and the functions the engine must host for it."""
    if isinstance(target, Mapping):
        return dict(target), {}
    if isinstance(target, str):  # JSON, or a JSON file, as --target takes it
        from evalrunner.cli.common import _json_arg

        parsed = _json_arg(target, "target")
        if not isinstance(parsed, dict):
            raise EventError(
                f"target: {target[:80]!r} is not a target object; give a dict such as "
                '{"url": "http://localhost:8080/ask"} or a Python function'
            )
        return parsed, {}
    if callable(target):
        name = function_target_name(target)
        return {"lambdaArn": name}, {name: function_handler(target)}
    raise EventError(
        f"target: a {type(target).__name__} is not a target; give a dict (the event's target "
        "object) or a function that takes a question and returns an answer"
    )


def function_target_name(fn: TargetFunction) -> str:
    """The name a callable target runs (and is reported) under: its own name, as Lambda
    allows function names (letters, digits, - and _; at most 64)."""
    raw = getattr(fn, "__name__", "") or type(fn).__name__
    name = _FUNCTION_NAME.sub("-", raw).strip("-_") or "function"
    if name == "<lambda>" or name == "lambda":
        name = "python-lambda"
    return name[:64]


def function_handler(fn: TargetFunction) -> Handler:
    """A Lambda-style handler around ``fn``: ``{"question": ...}`` in, ``fn``'s answer out.

    ``fn(question)`` may return the answer text, ``(answer, contexts)``, or a dict (any shape
    the response adapters read: ``{"answer": ..., "contexts": [...]}`` and the like). It is
    also given ``conversation=`` (the earlier turns) when it accepts that keyword. What it
    raises becomes that case's target error; the other cases run on."""
    takes_conversation = _accepts(fn, "conversation")

    def handler(event: dict[str, Any], context: Any) -> Any:
        question = event.get("question")
        if takes_conversation:
            result = fn(question, conversation=event.get("conversation") or [])
        else:
            result = fn(question)
        return _response(result)

    return handler


def _accepts(fn: TargetFunction, keyword: str) -> bool:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return keyword in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def _response(result: Any) -> Any:
    if isinstance(result, str | Mapping):
        return result
    if isinstance(result, tuple) and len(result) == 2:
        answer, contexts = result
        return {"answer": answer, "contexts": list(contexts or [])}
    what = "None" if result is None else f"a value of type {type(result).__name__}"
    raise ConfigError(
        f"the target function returned {what}; return the answer text, "
        '(answer, contexts), or a dict such as {"answer": "...", "contexts": ["..."]}'
    )


__all__ = [
    "TargetFunction",
    "function_handler",
    "function_target_name",
    "suite_file",
    "target_spec",
]
