"""Word-level perturbators: punctuation, word order, and words replaced by synonyms or
antonyms from the bundled lexicon (:mod:`evalrunner.perturb.lexicon`).

By hand for the same reason as :mod:`evalrunner.perturb.chars` (one seed, one text,
everywhere); the synonym and antonym tables come from a data file shipped in the package,
because every maintained library that offers them (nlpaug, checklist, textattack) reads
WordNet through nltk's downloader at run time, which these machines and a Lambda cannot do.
"""

from __future__ import annotations

import itertools
import random
import re

from evalrunner.perturb.chars import pick
from evalrunner.perturb.lexicon import antonyms, synonyms

#: A word: letters with an optional apostrophe part (don't, employee's).
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def _like(new: str, old: str) -> str:
    """``new`` written in the case pattern of ``old`` (Leave → Holiday, LEAVE → HOLIDAY)."""
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def comma(text: str, intensity: float, rng: random.Random) -> str:
    """Commas added between words and removed where they were: ``How many days of annual
    leave`` → ``How many days, of annual leave``. The words stay; a robust target does not
    care."""
    words = list(WORD.finditer(text))
    places: list[tuple[int, str]] = [(m.start(), "remove") for m in re.finditer(",", text)]
    for left, right in itertools.pairwise(words):
        if text[left.end() : right.start()] == " ":
            places.append((left.end(), "insert"))
    places.sort()
    chosen = [places[i] for i in pick(list(range(len(places))), intensity, rng)]
    out = text
    for at, action in reversed(chosen):
        out = out[:at] + out[at + 1 :] if action == "remove" else out[:at] + "," + out[at:]
    return out


def word_swap(text: str, intensity: float, rng: random.Random) -> str:
    """Neighbouring words swapped (intensity: share of the words moved, two per swap): ``How
    many days of annual leave`` → ``How many of days annual leave``."""
    words = list(WORD.finditer(text))
    if len(words) < 2:
        return text
    pairs = list(range(len(words) - 1))
    wanted = max(1, int(len(words) * intensity / 2 + 0.5))
    rng.shuffle(pairs)
    chosen: list[int] = []
    used: set[int] = set()
    for j in pairs:  # non-overlapping pairs, so every swap is visible
        if j not in used and j + 1 not in used:
            chosen.append(j)
            used.update((j, j + 1))
        if len(chosen) == wanted:
            break
    texts = [m.group() for m in words]
    for j in chosen:
        a, b = texts[j], texts[j + 1]
        if j == 0 and a[:1].isupper() and not (a.isupper() and len(a) > 1):
            a, b = a[:1].lower() + a[1:] if a != "I" else a, b[:1].upper() + b[1:]
        texts[j], texts[j + 1] = b, a
    out, last = [], 0
    for m, new in zip(words, texts, strict=True):
        out += [text[last : m.start()], new]
        last = m.end()
    return "".join([*out, text[last:]])


def _replace(text: str, intensity: float, rng: random.Random, table: dict[str, list[str]]) -> str:
    words = [m for m in WORD.finditer(text) if m.group().lower() in table]
    chosen = [words[i] for i in pick(list(range(len(words))), intensity, rng)]
    out = text
    for m in reversed(chosen):
        choice = rng.choice(table[m.group().lower()])
        out = out[: m.start()] + _like(choice, m.group()) + out[m.end() :]
    return out


def synonym(text: str, intensity: float, rng: random.Random) -> str:
    """Words replaced by a synonym (intensity: share of the words the lexicon knows):
    ``How many days of annual leave`` → ``How many days of yearly leave``."""
    return _replace(text, intensity, rng, synonyms())


def antonym(text: str, intensity: float, rng: random.Random) -> str:
    """Words replaced by an antonym, which must change the answer: ``paid sick leave`` →
    ``unpaid sick leave``. A flip here is expected; the same verdict is the problem."""
    return _replace(text, intensity, rng, antonyms())
