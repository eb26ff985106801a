"""The forms text carries values in, undone before :mod:`evalrunner.privacy`'s finders read
it, so a value written in another script's digits, with typeset dashes or spaces, or with
characters that render as nothing inside it, is found all the same.

Both steps keep the way back to the text as written: :func:`folded` replaces one character
for one, and :func:`visible` says where each character it keeps came from, so a span found
is masked in the caller's text, invisible characters inside it included.
"""

from __future__ import annotations

import re
import unicodedata

#: Typeset dashes and spaces written in numbers, and the full-width at sign and full stop.
_FOLD = {
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d", "-"),
    **dict.fromkeys("\u00a0\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    "\uff20": "@",
    "\uff0e": ".",
}
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
#: Characters that render as nothing: the soft hyphen (text copied from PDFs and word
#: processors), the zero-width space, non-joiner and joiner, the word joiner, the byte order
#: mark. Inside ``jo\u200b@ex.com`` the reader sees the whole address; a pattern stopped at it.
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")


def _fold_char(match: re.Match[str]) -> str:
    char = match.group()
    digit = unicodedata.decimal(char, None)
    return str(digit) if digit is not None else _FOLD.get(char, char)


def folded(text: str) -> str:
    """``text`` with every decimal digit as its ASCII digit and the characters of
    :data:`_FOLD` as theirs, one character for one (so a span of it is the same span of
    ``text``); an ASCII text as it is."""
    return text if text.isascii() else _NON_ASCII.sub(_fold_char, text)


def visible(text: str) -> tuple[str, list[int] | None]:
    """``text`` without its invisible characters, and for each character kept its index in
    ``text`` (None: there were none, the text is returned as it is)."""
    if text.isascii() or not _INVISIBLE.search(text):
        return text, None
    where = [i for i, char in enumerate(text) if not _INVISIBLE.fullmatch(char)]
    return "".join(text[i] for i in where), where
