"""The condition language of text matching: what an answer (or context) must contain.

A suite's ``condition`` column comes in two forms, both from H2O Eval Studio:

List form (a JSON array)
    Every item must hold. A string item must be contained in the text (case-sensitive);
    ``"REGEXP:pattern"`` must match somewhere (``search``; the prefix is case-insensitive); a
    nested list holds if any of its items holds (at any depth: a list inside a nested list is
    one more set of alternatives). Example: ``["15,969", ["Brazil", "BRAZIL"], "REGEXP:\\d{4}"]``.

Expression form (a string)
    Operands ``"text"`` (double quotes) and ``regexp("pattern")``; operators ``AND``, ``OR``,
    ``NOT`` (keywords case-insensitive) and parentheses; precedence NOT > AND > OR. Example::

        ("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"

    Escapes in ``"text"``: ``\\"`` is a quote, ``\\\\`` a backslash, ``\\n`` a newline, ``\\t``
    a tab; any other backslash is kept as written (so ``"C:\\Users"`` works). In
    ``regexp("...")`` only ``\\"`` is turned into a quote; every other backslash reaches the
    regex engine unchanged, so ``regexp("\\bper\\s+week\\b")`` means what it says.

Both forms parse to the same tree (``describe()`` writes any condition in expression form).
The parser is a small recursive-descent parser, never ``eval``; nesting is capped at
:data:`MAX_DEPTH`. Patterns are untrusted: they are compiled with the ``regex`` module and
every match runs with a timeout (:data:`REGEX_TIMEOUT` seconds), so a catastrophically
backtracking pattern raises :class:`ConditionTimeout` instead of hanging the run.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

__all__ = [
    "MAX_DEPTH",
    "REGEX_TIMEOUT",
    "Condition",
    "ConditionError",
    "ConditionTimeout",
    "parse_condition",
]

#: Seconds one regex match may take before the evaluation is abandoned.
REGEX_TIMEOUT = 0.05
#: Deepest nesting of parentheses, NOTs or lists accepted (keeps recursion bounded).
MAX_DEPTH = 64
#: Longest operand shown in explanations before it is shortened with an ellipsis.
_SHOWN = 40


class ConditionError(ValueError):
    """A condition that cannot be parsed or evaluated.

    ``position`` is a 0-based character offset into an expression, or a list path such as
    ``"[2][0]"`` for the list form (``""`` for the list as a whole).
    """

    def __init__(self, message: str, position: int | str) -> None:
        self.message = message
        self.position = position
        super().__init__(message, position)  # args round-trip through pickle

    def __str__(self) -> str:
        if isinstance(self.position, int):
            return f"{self.message} at position {self.position}"
        if self.position:
            return f"{self.message} at item {self.position}"
        return self.message


class ConditionTimeout(ConditionError):
    """A regex operand ran past :data:`REGEX_TIMEOUT` on some text (a parse failure)."""


def _shorten(value: str, limit: int = _SHOWN) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _quote_text(value: str) -> str:
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def _quote_pattern(pattern: str) -> str:
    # Escape lone quotes only; an existing \" stays (in a regex \" and " mean the same).
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        out.append('\\"' if c == '"' else c)
        i += 1
    return '"' + "".join(out) + '"'


# --- The tree ---------------------------------------------------------------------------------


class _Node(ABC):
    #: List path (list form only), used to say which item decided.
    label: str = ""

    @abstractmethod
    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        """Whether the node holds on ``text``, and why (short, names the operand)."""

    @abstractmethod
    def describe(self) -> str:
        """Expression-form source of the node (parseable back)."""

    def short(self) -> str:
        return _shorten(self.describe(), 2 * _SHOWN)


@dataclass(frozen=True, eq=False)
class _Text(_Node):
    value: str
    label: str = ""

    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        shown = _quote_text(_shorten(self.value))
        if self.value in text:
            return True, f"contains {shown}"
        return False, f"does not contain {shown}"

    def describe(self) -> str:
        return _quote_text(self.value)

    def short(self) -> str:
        return _quote_text(_shorten(self.value))


@dataclass(frozen=True, eq=False)
class _Regexp(_Node):
    pattern: str
    compiled: regex.Pattern[str]
    where: int | str
    label: str = ""

    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        try:
            match = self.compiled.search(text, timeout=timeout)
        except TimeoutError:
            raise ConditionTimeout(
                f"{self.short()} timed out after {timeout:g} s on {len(text)} characters "
                "(catastrophic backtracking?)",
                self.where,
            ) from None
        if match is None:
            return False, f"no match for {self.short()}"
        return True, f'{self.short()} matches "{_shorten(match.group())}"'

    def describe(self) -> str:
        return f"regexp({_quote_pattern(self.pattern)})"

    def short(self) -> str:
        return f"regexp({_quote_pattern(_shorten(self.pattern))})"


@dataclass(frozen=True, eq=False)
class _Not(_Node):
    operand: _Node

    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        held, why = self.operand.check(text, timeout)
        if held:
            return False, f"{why} (excluded by NOT)"
        return True, why

    def describe(self) -> str:
        inner = self.operand.describe()
        return f"NOT ({inner})" if isinstance(self.operand, _And | _Or) else f"NOT {inner}"


def _labelled(node: _Node, why: str) -> str:
    return f"item {node.label}: {why}" if node.label else why


@dataclass(frozen=True, eq=False)
class _And(_Node):
    items: tuple[_Node, ...]
    label: str = ""

    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        reasons = []
        for item in self.items:
            held, why = item.check(text, timeout)
            if not held:
                return False, _labelled(item, why)
            reasons.append(why)
        if len(reasons) == 1:
            return True, reasons[0]
        shown = "; ".join(reasons[:3])
        more = f"; and {len(reasons) - 3} more" if len(reasons) > 3 else ""
        return True, f"{shown}{more}"

    def describe(self) -> str:
        return " AND ".join(
            f"({i.describe()})" if isinstance(i, _Or) else i.describe() for i in self.items
        )


@dataclass(frozen=True, eq=False)
class _Or(_Node):
    items: tuple[_Node, ...]
    label: str = ""

    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        for item in self.items:
            held, why = item.check(text, timeout)
            if held:
                return True, _labelled(item, why)
        if len(self.items) == 1:
            return False, why
        alternatives = " | ".join(i.short() for i in self.items[:5])
        more = f" | {len(self.items) - 5} more" if len(self.items) > 5 else ""
        return False, f"none of {alternatives}{more} holds"

    def describe(self) -> str:
        return " OR ".join(i.describe() for i in self.items)


class Condition:
    """A parsed condition; immutable and shared (see :func:`parse_condition`)."""

    __slots__ = ("_root",)

    def __init__(self, root: _Node) -> None:
        self._root = root

    def check(self, text: str, *, timeout: float = REGEX_TIMEOUT) -> tuple[bool, str]:
        """Whether the condition holds on ``text`` and the explanation, in one pass.

        Raises :class:`ConditionTimeout` when a regex operand runs past ``timeout``.
        """
        return self._root.check(text, timeout)

    def holds(self, text: str, *, timeout: float = REGEX_TIMEOUT) -> bool:
        """Whether ``text`` satisfies the condition (raises :class:`ConditionTimeout`)."""
        return self._root.check(text, timeout)[0]

    def explain(self, text: str, *, timeout: float = REGEX_TIMEOUT) -> str:
        """Which item or operand decided, e.g. ``item [1]: does not contain "EUR"``."""
        return self._root.check(text, timeout)[1]

    def describe(self) -> str:
        """The condition in expression form; ``parse_condition(c.describe())`` is equivalent."""
        return self._root.describe()

    def __repr__(self) -> str:
        return f"Condition({self.describe()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Condition) and self.describe() == other.describe()

    def __hash__(self) -> int:
        return hash(self.describe())


# --- Parsing ----------------------------------------------------------------------------------


def _compile(pattern: str, where: int | str, label: str = "") -> _Regexp:
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        offset = f" (pattern offset {exc.pos})" if exc.pos is not None else ""
        raise ConditionError(
            f"invalid regexp {_quote_pattern(_shorten(pattern))}: {exc.msg}{offset}", where
        ) from None
    except (OverflowError, RecursionError, MemoryError, ValueError) as exc:
        raise ConditionError(
            f"invalid regexp {_quote_pattern(_shorten(pattern))}: {exc}", where
        ) from None
    return _Regexp(pattern, compiled, where, label)


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "STRING", "AND", "OR", "NOT", "REGEXP"
    raw: str  # source text (for STRING: the body between the quotes, escapes unprocessed)
    pos: int


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = frozenset({"AND", "OR", "NOT", "REGEXP"})
_TEXT_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_TEXT_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_HINTS = {
    "'": "; text operands use double quotes",
    "&": "; use AND",
    "|": "; use OR",
    "!": "; use NOT",
}


def _tokenize(src: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif c in "()":
            tokens.append(_Token(c, c, i))
            i += 1
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            if j >= n:
                raise ConditionError("unterminated string: missing closing '\"'", i)
            tokens.append(_Token("STRING", src[i + 1 : j], i))
            i = j + 1
        elif match := _WORD.match(src, i):
            word = match.group()
            if word.upper() not in _KEYWORDS:
                raise ConditionError(
                    f"unknown token {_shorten(word)!r} (quote text as "
                    f'"{_shorten(word)}"; operators are AND, OR, NOT)',
                    i,
                )
            tokens.append(_Token(word.upper(), word, i))
            i = match.end()
        else:
            raise ConditionError(f"unexpected character {c!r}{_HINTS.get(c, '')}", i)
    return tokens


class _Parser:
    """expr := and (OR and)* ; and := not (AND not)* ; not := NOT not | atom ;
    atom := STRING | REGEXP "(" STRING ")" | "(" expr ")"."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.tokens = _tokenize(src)
        self.i = 0

    def parse(self) -> _Node:
        if not self.tokens:
            raise ConditionError("empty condition", 0)
        node = self.expr(0)
        if self.i < len(self.tokens):
            tok = self.tokens[self.i]
            if tok.kind == ")":
                raise ConditionError("unbalanced ')': no '(' to close", tok.pos)
            raise ConditionError(f"expected AND or OR before {self._show(tok)}", tok.pos)
        return node

    def _peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _show(self, tok: _Token) -> str:
        return f'"{_shorten(tok.raw)}"' if tok.kind == "STRING" else repr(tok.raw)

    def _deeper(self, depth: int, pos: int) -> int:
        if depth >= MAX_DEPTH:
            raise ConditionError(f"nested more than {MAX_DEPTH} levels deep", pos)
        return depth + 1

    def expr(self, depth: int) -> _Node:
        items = [self.conjunction(depth)]
        while (tok := self._peek()) is not None and tok.kind == "OR":
            self.i += 1
            items.append(self.conjunction(depth))
        return items[0] if len(items) == 1 else _Or(tuple(items))

    def conjunction(self, depth: int) -> _Node:
        items = [self.negation(depth)]
        while (tok := self._peek()) is not None and tok.kind == "AND":
            self.i += 1
            items.append(self.negation(depth))
        return items[0] if len(items) == 1 else _And(tuple(items))

    def negation(self, depth: int) -> _Node:
        tok = self._peek()
        if tok is not None and tok.kind == "NOT":
            self.i += 1
            return _Not(self.negation(self._deeper(depth, tok.pos)))
        return self.atom(depth)

    def _missing_operand(self) -> ConditionError:
        before = self.tokens[self.i - 1] if self.i else None
        after = f" after {self._show(before)}" if before is not None else ""
        return ConditionError(f"missing operand{after}", len(self.src))

    def atom(self, depth: int) -> _Node:
        tok = self._peek()
        if tok is None:
            raise self._missing_operand()
        self.i += 1
        if tok.kind == "STRING":
            value = _TEXT_ESCAPE.sub(lambda m: _TEXT_ESCAPES.get(m[1], m[0]), tok.raw)
            if not value:
                raise ConditionError('empty text operand ""', tok.pos)
            return _Text(value)
        if tok.kind == "REGEXP":
            return self.regexp(tok)
        if tok.kind == "(":
            inner = self._peek()
            if inner is not None and inner.kind == ")":
                raise ConditionError("empty parentheses", tok.pos)
            node = self.expr(self._deeper(depth, tok.pos))
            close = self._peek()
            if close is None or close.kind != ")":
                raise ConditionError("unbalanced '(': no matching ')'", tok.pos)
            self.i += 1
            return node
        if tok.kind == ")":
            raise ConditionError("missing operand before ')'", tok.pos)
        raise ConditionError(f"missing operand before {tok.raw}", tok.pos)

    def regexp(self, keyword: _Token) -> _Node:
        parts = self.tokens[self.i : self.i + 3]
        kinds = [t.kind for t in parts]
        if kinds[:1] != ["("] or kinds[1:2] != ["STRING"] or kinds[2:3] != [")"]:
            raise ConditionError('regexp must be written regexp("pattern")', keyword.pos)
        self.i += 3
        pattern = parts[1].raw.replace('\\"', '"')
        if not pattern:
            raise ConditionError('empty pattern in regexp("")', keyword.pos)
        return _compile(pattern, keyword.pos)


_REGEXP_PREFIX = "regexp:"


def _list_node(items: tuple[object, ...], path: str, depth: int, *, any_of: bool) -> _Node:
    if depth > MAX_DEPTH:
        raise ConditionError(f"lists nested more than {MAX_DEPTH} levels deep", path)
    if not items:
        raise ConditionError("empty list", path)
    nodes: list[_Node] = []
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        node: _Node
        if isinstance(item, tuple):
            node = _list_node(item, where, depth + 1, any_of=True)
        elif not isinstance(item, str) or not item:
            raise ConditionError('empty text item ""', where)
        elif item[: len(_REGEXP_PREFIX)].lower() == _REGEXP_PREFIX:
            pattern = item[len(_REGEXP_PREFIX) :]
            if not pattern:
                raise ConditionError("empty pattern after REGEXP:", where)
            node = _compile(pattern, where, where)
        else:
            node = _Text(item, where)
        nodes.append(node)
    if any_of:
        return _Or(tuple(nodes), path)
    return _And(tuple(nodes), path)


def _freeze(items: Sequence[object], path: str = "") -> tuple[object, ...]:
    """Lists → tuples (hashable, for the cache), refusing anything but strings and lists."""
    out: list[object] = []
    for i, item in enumerate(items):
        if isinstance(item, list | tuple):
            out.append(_freeze(item, f"{path}[{i}]"))
        elif isinstance(item, str):
            out.append(item)
        else:
            raise ConditionError(
                f"the list form holds only strings and nested lists, found "
                f"{type(item).__name__} {_shorten(repr(item))}",
                f"{path}[{i}]",
            )
    return tuple(out)


@lru_cache(maxsize=2048)
def _parse_expression(src: str) -> Condition:
    return Condition(_Parser(src).parse())


@lru_cache(maxsize=2048)
def _parse_list(items: tuple[object, ...]) -> Condition:
    return Condition(_list_node(items, "", 0, any_of=False))


def parse_condition(condition: str | list[object]) -> Condition:
    """Parse either form; raises :class:`ConditionError` (message + position) when invalid.

    Parsed conditions are cached by their source, so calling this per case is cheap.
    """
    if isinstance(condition, str):
        return _parse_expression(condition)
    if isinstance(condition, list | tuple):
        return _parse_list(_freeze(condition))
    raise ConditionError(
        f"a condition is an expression string or a list, not {type(condition).__name__}", 0
    )
