"""Untrusted text made storable where it enters: answers, contexts and suite cells.

Models and many-handed suites produce text that Python holds happily but nothing downstream
accepts: a lone surrogate (``"\\ud800"``, legal in JSON escapes) cannot be encoded as UTF-8,
so writing the case record or the manifest crashed the case; NUL and other C0 control
characters are refused by openpyxl and mangle CSV and HTML. Rather than escape at every
writer, text is cleaned once, here, at the boundary, and what was replaced is reported so
the case can say so instead of silently scoring different text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: What replaces a character that cannot be kept.
REPLACEMENT = "\ufffd"

#: Lone (unpaired) UTF-16 surrogates: valid in a Python str and in JSON ``\\u`` escapes,
#: never encodable as UTF-8. (A str never holds a *paired* surrogate: JSON decoding joins
#: a valid pair into one code point.)
_SURROGATE = re.compile("[\ud800-\udfff]")
#: C0 controls except tab, LF and CR, plus DEL: NUL truncates C strings, openpyxl refuses
#: them all, and none of them is text anyone means to evaluate.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Anything worth a look at all; most text has none of these, so cleaning costs one scan.
_SUSPECT = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class Sanitized:
    """What :func:`sanitize_text` replaced, counted by kind, for the case's notes.

    ``counts`` is a plain dict, not a ``Counter``: one of these is made for every text that
    enters (each suite cell, each field of each answer), nearly all of them clean, and a
    ``Counter`` costs a Python-level ``__init__`` each where a dict costs nothing."""

    counts: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def add(self, other: Sanitized) -> None:
        for kind, n in other.counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + n

    def describe(self, where: str) -> str:
        """``"answer: 1 lone surrogate, 2 control characters replaced by U+FFFD"``."""
        parts = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(self.counts.items())]
        return f"{where}: {', '.join(parts)} replaced by U+FFFD"


def sanitize_text(text: str) -> tuple[str, Sanitized]:
    """``text`` with lone surrogates and control characters (but ``\\t \\n \\r``) replaced
    by U+FFFD, and what was replaced. Line endings are kept: they are the answer's own."""
    found = Sanitized()
    if _SUSPECT.search(text) is None:
        return text, found
    text, surrogates = _SURROGATE.subn(REPLACEMENT, text)
    text, controls = _CONTROL.subn(REPLACEMENT, text)
    if surrogates:
        found.counts["lone surrogate"] = surrogates
    if controls:
        found.counts["control character"] = controls
    return text, found


def is_clean(value: Any) -> bool:
    """Whether a JSON-like value (keys included) holds nothing :func:`sanitize_value` would
    replace: one regex scan per string, nothing allocated. Nearly every cell and answer is
    clean, so callers ask this first and only copy what is not. (Loops rather than
    ``all()`` over a generator, and a tuple of types rather than ``list | tuple``: this runs
    for every cell and every answer field, and those cost a third of its time.)"""
    if isinstance(value, str):
        return _SUSPECT.search(value) is None
    if isinstance(value, (list, tuple)):
        for item in value:
            if not is_clean(item):
                return False
        return True
    if isinstance(value, dict):
        for key, item in value.items():
            if not (is_clean(key) and is_clean(item)):
                return False
        return True
    return True


def sanitize_value(value: Any, found: Sanitized | None = None) -> tuple[Any, Sanitized]:
    """:func:`sanitize_text` applied to every string in a JSON-like value (keys included),
    for suite cells and metadata that may be lists or objects. A clean value comes back as
    it is (the same object, not a copy); a dirty one as a cleaned copy."""
    found = found if found is not None else Sanitized()
    if is_clean(value):
        return value, found
    return _cleaned(value, found), found


def _cleaned(value: Any, found: Sanitized) -> Any:
    """A copy of ``value`` with every string cleaned, what was replaced added to ``found``."""
    if isinstance(value, str):
        cleaned, seen = sanitize_text(value)
        found.add(seen)
        return cleaned
    if isinstance(value, list | tuple):
        return type(value)(_cleaned(v, found) for v in value)
    if isinstance(value, dict):
        return {_cleaned(k, found): _cleaned(v, found) for k, v in value.items()}
    return value


#: Characters of one text (answer, one context, expected answer, ...) an evaluator examines.
#: 100,000 characters is ~25,000 tokens: far beyond any answer worth grading, yet every CPU
#: evaluator (ROUGE, BLEU, looping, ...) finishes it in well under a second, while 5 MB
#: took ~55 s and 1.1 GB. Model evaluators truncate to their own token window anyway.
DEFAULT_MAX_TEXT_CHARS = 100_000


def cap_text(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` cut to ``max_chars`` characters, and whether it was cut."""
    if len(text) <= max_chars:
        return text, False
    return text[:max_chars], True
