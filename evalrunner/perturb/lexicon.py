"""The bundled synonym and antonym lexicon (``lexicon.json`` in this package).

A data file, not a download: no package on PyPI ships WordNet's data for offline use (nltk's
and wn's readers fetch it at run time, which neither these machines nor a Lambda can do), so
the lexicon is a small curated file whose origin and licence its ``about`` field states.
Lookups are by lower-cased word; the replacement lists keep the file's order, so a seed picks
the same word on every machine.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def _data() -> dict[str, Any]:
    text = resources.files("evalrunner.perturb").joinpath("lexicon.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _table(groups: list[list[str]]) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for group in groups:
        for word in group:
            if " " in word:  # a phrase is a replacement only: WORD never matches one
                continue
            others = [w for w in group if w != word]
            table.setdefault(word.lower(), [])
            table[word.lower()] += [w for w in others if w not in table[word.lower()]]
    return table


@cache
def synonyms() -> dict[str, list[str]]:
    """word -> its synonyms (each group's other members, in file order)."""
    return _table(_data()["synonyms"])


@cache
def antonyms() -> dict[str, list[str]]:
    """word -> its antonyms (each pair both ways)."""
    return _table(_data()["antonyms"])
