"""Character-level perturbators: what a hurried or careless user, a different keyboard, or an
OCR pass does to a question.

Written by hand on purpose: each is a few lines over :class:`random.Random`, whose output
for a given integer seed is the same on every platform and Python version this project
supports; the augmentation libraries that offer them (nlpaug, augly) draw from numpy's or
the global random state, pull in large dependency trees, and do not promise that one seed
gives one text across releases, which is the property a regression suite needs.

Every function takes the text, the intensity (share of the eligible characters touched, at
least one when any is eligible) and the case's generator, and never touches anything but
ASCII letters (and, for OCR, digits): numbers, punctuation and non-Latin text stay as they
are, so a typo never silently changes "25 days" into "35 days".
"""

from __future__ import annotations

import random
import string

#: QWERTY neighbours of each lower-case letter (same row and the rows above and below).
KEYBOARD: dict[str, str] = {
    "q": "wa",
    "w": "qeas",
    "e": "wrsd",
    "r": "etdf",
    "t": "ryfg",
    "y": "tugh",
    "u": "yihj",
    "i": "uojk",
    "o": "ipkl",
    "p": "ol",
    "a": "qwsz",
    "s": "awedxz",
    "d": "serfcx",
    "f": "drtgvc",
    "g": "ftyhbv",
    "h": "gyujnb",
    "j": "huikmn",
    "k": "jiolm",
    "l": "kop",
    "z": "asx",
    "x": "zsdc",
    "c": "xdfv",
    "v": "cfgb",
    "b": "vghn",
    "n": "bhjm",
    "m": "njk",
}

#: Characters OCR engines confuse, each with what it is misread as.
OCR: dict[str, str] = {
    "o": "0",
    "O": "0",
    "l": "1",
    "I": "1",
    "i": "l",
    "s": "5",
    "S": "5",
    "e": "c",
    "c": "e",
    "b": "6",
    "g": "9",
    "B": "8",
    "Z": "2",
    "z": "2",
    "m": "rn",
    "h": "b",
    "u": "v",
    "0": "O",
    "1": "l",
    "5": "S",
}

_LOWER = string.ascii_lowercase


def touched(count: int, intensity: float) -> int:
    """How many of ``count`` eligible places an intensity touches: the share rounded half
    up, at least one when there is anything to touch."""
    if count == 0:
        return 0
    return min(count, max(1, int(count * intensity + 0.5)))


def pick(positions: list[int], intensity: float, rng: random.Random) -> list[int]:
    """The positions touched, in text order."""
    return sorted(rng.sample(positions, touched(len(positions), intensity)))


def _ascii_letter(ch: str) -> bool:
    return ch in string.ascii_letters


def _same_case(new: str, old: str) -> str:
    return new.upper() if old.isupper() else new


def char_replace(text: str, intensity: float, rng: random.Random) -> str:
    """Letters replaced by a random other letter: ``leave`` → ``lqave``."""
    chars = list(text)
    for i in pick([i for i, c in enumerate(chars) if _ascii_letter(c)], intensity, rng):
        old = chars[i]
        new = rng.choice([c for c in _LOWER if c != old.lower()])
        chars[i] = _same_case(new, old)
    return "".join(chars)


def typos(text: str, intensity: float, rng: random.Random) -> str:
    """Letters replaced by a QWERTY neighbour, the slip of a finger: ``days`` → ``dsys``."""
    chars = list(text)
    for i in pick([i for i, c in enumerate(chars) if c.lower() in KEYBOARD], intensity, rng):
        old = chars[i]
        chars[i] = _same_case(rng.choice(KEYBOARD[old.lower()]), old)
    return "".join(chars)


def char_insert(text: str, intensity: float, rng: random.Random) -> str:
    """A random letter inserted after letters: ``leave`` → ``leavxe``."""
    chosen = set(pick([i for i, c in enumerate(text) if _ascii_letter(c)], intensity, rng))
    out = []
    for i, ch in enumerate(text):
        out.append(ch)
        if i in chosen:
            out.append(rng.choice(_LOWER))
    return "".join(out)


def char_delete(text: str, intensity: float, rng: random.Random) -> str:
    """Letters dropped (never a whole one-letter word): ``annual`` → ``anual``."""
    eligible = [
        i
        for i, c in enumerate(text)
        if _ascii_letter(c)
        and (
            (i > 0 and _ascii_letter(text[i - 1]))
            or (i + 1 < len(text) and _ascii_letter(text[i + 1]))
        )
    ]
    dropped = set(pick(eligible, intensity, rng))
    return "".join(ch for i, ch in enumerate(text) if i not in dropped)


def ocr(text: str, intensity: float, rng: random.Random) -> str:
    """Characters an OCR engine confuses: ``holiday`` → ``h0liday``, ``m`` → ``rn``."""
    chosen = set(pick([i for i, c in enumerate(text) if c in OCR], intensity, rng))
    return "".join(OCR[ch] if i in chosen else ch for i, ch in enumerate(text))


def yz_swap(text: str, intensity: float, rng: random.Random) -> str:
    """y and z swapped, as typed on a German (QWERTZ) keyboard set to QWERTY: ``yearly`` →
    ``zearlz``."""
    swap = {"y": "z", "z": "y", "Y": "Z", "Z": "Y"}
    chosen = set(pick([i for i, c in enumerate(text) if c in swap], intensity, rng))
    return "".join(swap[ch] if i in chosen else ch for i, ch in enumerate(text))
