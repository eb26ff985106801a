"""What a reply without an answer is said to hold, and the ``answer_path`` that would select
one: the error a user reads when the defaults find no answer (its keys, its kind of value)
and the fix written in full from the reply's own keys.
"""

from __future__ import annotations

import json
from typing import Any

from evalrunner.http_client import snippet
from evalrunner.targets.reply_keys import ANSWER_KEYS


def json_kind(value: Any) -> str:
    """What a JSON value is, in words (never a Python type name)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a true/false value"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return "an object" if isinstance(value, dict) else "a value"


def describe(root: Any) -> str:
    if isinstance(root, dict):
        keys = [json.dumps(snippet(str(k), 40)) for k in sorted(root, key=str)]
        shown = ", ".join(keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")
        return f"its keys are {shown}" if keys else "it is an empty object"
    if isinstance(root, list):
        return f"it is a JSON list of {len(root)} item(s)"
    return f"it is {json_kind(root)}: {snippet(json.dumps(root, default=str), 80)}"


#: Keys that name an answer in the wild, besides :data:`ANSWER_KEYS`: a leaf under one of
#: them is the better guess for ``answer_path``.
_ANSWERISH = (*ANSWER_KEYS, "reply", "answer_text", "msg", "generation", "output_text", "data")


def _path_part(key: str) -> str:
    """One key of a JMESPath: bare when it is an identifier, else quoted."""
    if key.isidentifier() and key.isascii():
        return key
    return json.dumps(key)


def _string_leaves(value: Any, path: str, depth: int, out: list[tuple[str, str, str]]) -> None:
    """(JMESPath, last key, text) of every string in ``value``, a few levels deep."""
    if depth > 6 or len(out) > 200:
        return
    if isinstance(value, str):
        key = path.rsplit(".", 1)[-1].split("[", 1)[0].strip('"')
        out.append((path, key, value))
    elif isinstance(value, dict):
        for key, item in value.items():
            part = _path_part(str(key))
            _string_leaves(item, f"{path}.{part}" if path else part, depth + 1, out)
    elif isinstance(value, list):
        for index, item in enumerate(value[:5]):
            _string_leaves(item, f"{path}[{index}]", depth + 1, out)


def suggest_answer_path(root: Any) -> str | None:
    """The JMESPath of the likeliest answer in a response: a text under an answer-like key
    (reply, text, content, ...), else the longest text; None when the response holds none."""
    leaves: list[tuple[str, str, str]] = []
    _string_leaves(root, "", 0, leaves)
    leaves = [leaf for leaf in leaves if leaf[0] and leaf[2].strip()]
    if not leaves:
        return None
    answerish = [leaf for leaf in leaves if leaf[1].lower() in _ANSWERISH]
    return max(answerish or leaves, key=lambda leaf: len(leaf[2]))[0]


def answer_path_fix(root: Any, verb: str = "Set") -> str:
    """The fix, written in full: ``"answer_path": "<path>"`` from the response's own keys."""
    path = suggest_answer_path(root)
    if path is None:
        return (
            f"{verb} target.answer_path to a JMESPath expression that selects the answer, "
            'e.g. "answer_path": "data.reply".'
        )
    return (
        f"{verb} target.answer_path to the JMESPath expression that selects the answer; in "
        f"this response that is probably {json.dumps({'answer_path': path})[1:-1]}."
    )


def no_answer_message(root: Any, source: str) -> str:
    return (
        f"No answer found in the response of {source}: {describe(root)}. Looked for "
        f"{', '.join(ANSWER_KEYS)}. {answer_path_fix(root)}"
    )
