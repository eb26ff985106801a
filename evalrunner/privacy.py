"""PII masking of production text before any judge (or report) sees it.

Monitor runs score what real users typed and what the assistant answered; those texts hold e-mail
addresses, phone numbers, card numbers, IBANs, IP addresses, national ids, street addresses and
names. Each one found is replaced by a *typed, numbered* placeholder (``<EMAIL_1>``,
``<PHONE_2>``), the same value by the same placeholder everywhere in one case (question, answer,
contexts, turns), so a judge can still tell "the answer repeats the address the user gave" from
"the answer invents one", and nothing of the value itself leaves the case.

What finds each kind, from well-kept libraries where one exists:

- phones: ``phonenumbers`` (Google's libphonenumber), its ``PhoneNumberMatcher`` at
  ``VALID`` leniency (the ``lite`` distribution: the same matcher without the geocoding and
  carrier tables) for each region whose national formats should be recognised;
- cards (Luhn), IBANs (mod 97 and each country's length), US social security numbers
  (``123-45-6789`` or ``123 45 6789``): ``python-stdnum``;
- IP addresses: the standard library's :mod:`ipaddress` (v4 and v6);
- e-mail addresses: a pattern, in any script (RFC 6531: ``jörg@exämple.de``, the IDNA
  ``xn--`` form of a domain being the same address) and spelled out to hide it
  (``jo(at)ex.com``, ``jo [at] ex [dot] com``: bracketed words only, a bare "at" is English);
- street addresses of the US, Canada and the UK: ``pyap2``'s rules
  (:mod:`evalrunner.privacy_addresses`, which says what they miss);
- personal names: **opt-in**, a spaCy NER model the options name (``ner_model``; the
  ``ner`` extra; :mod:`evalrunner.privacy_names`). PERSON is not a default kind; asking for
  it without a model, or without spaCy, is a :class:`~evalrunner.errors.ConfigError` when
  the masker is built, never a silent skip.

Why not Microsoft Presidio (README, "Masking personal data"): its recognizers are these same
validators and spaCy model, with the full ``phonenumbers`` (48 MB) on top; without spaCy the
masking fits the zip Lambda, and one that masks names deploys as an image (``infra/ner_image.py``).

Where findings overlap, the kinds of :data:`_PRIORITY` win in order; an address or a name
that loses still has its parts outside the winner masked, so nothing found stays visible.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import phonenumbers
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.us import ssn as stdnum_ssn

from evalrunner.errors import ConfigError
from evalrunner.privacy_addresses import ADDRESS_COUNTRIES, find_addresses
from evalrunner.privacy_names import (
    DEFAULT_NER_LABELS,
    SPACY_REQUIREMENT,
    EntityFinder,
    load_entity_finder,
)
from evalrunner.privacy_text import folded, visible
from evalrunner.suite.model import TestCase, Turn


class PiiKind(StrEnum):
    """What is masked; the value is the placeholder's type (``<EMAIL_1>``)."""

    EMAIL = "EMAIL"
    PHONE = "PHONE"
    CARD = "CARD"
    IBAN = "IBAN"
    IP = "IP"
    SSN = "SSN"
    #: Street addresses of the US, Canada and the UK (``pyap2``), or what an NER model's
    #: labels mapped to ADDRESS find (:attr:`PiiOptions.ner_labels`).
    ADDRESS = "ADDRESS"
    #: Personal names: needs an NER model (:attr:`PiiOptions.ner_model`, the ``ner`` extra).
    PERSON = "PERSON"


#: What is masked when no kinds are given: every kind but PERSON, the one that needs a model.
DEFAULT_KINDS = tuple(kind for kind in PiiKind if kind is not PiiKind.PERSON)


#: The regions whose *national* phone formats are recognised by default (a number written
#: with its ``+country`` prefix is recognised whatever the region list).
DEFAULT_PHONE_REGIONS = ("US", "GB", "DE", "FR", "IN")

#: When two findings overlap, the earlier kind in this order wins (a card number is never
#: also read as a phone number; an SSN never as a phone). An address or a name that loses
#: an overlap still has its parts outside the winner masked (:meth:`PiiMasker.find`).
_PRIORITY = (
    PiiKind.EMAIL,
    PiiKind.IBAN,
    PiiKind.CARD,
    PiiKind.SSN,
    PiiKind.IP,
    PiiKind.ADDRESS,
    PiiKind.PHONE,
    PiiKind.PERSON,
)
#: Kinds found in words, not digits: their spans can be long, so one that loses an overlap
#: is cut around the winner rather than dropped (nothing a detector found stays visible).
_TEXTUAL = frozenset({PiiKind.ADDRESS, PiiKind.PERSON})

#: The at sign as text carries it: itself, or as HTML (``&#64;``, ``&#x40;``, ``&commat;``) and
#: URLs (``%40``) encode it (``mailto:jo%40ex.com``, ``jo&#64;ex.com`` in logged markup).
_AT = re.compile(r"@|&#(?:64|[xX]40);|%40|&commat;")
#: An e-mail's parts in any script (RFC 6531 addresses: ``jörg@exämple.de``, ``用户@例子.中国``):
#: the local part's characters, one domain label, and a top-level domain: ASCII letters
#: (not run on into more ASCII), an IDNA ``xn--`` label, or letters of another script. In
#: scripts written without spaces the match may take the words against the address too:
#: it errs on the side of hiding more.
_LOCAL = r"[\w.%+\-]"
_LABEL = r"[^\W_](?:[\w\-]*[^\W_])?"
_TLD = (
    r"(?:[A-Za-z]{2,24}(?![A-Za-z0-9])|xn--[A-Za-z0-9\-]{1,59}(?![\w\-])"
    r"|[^\W\d_A-Za-z]{2,24}(?!\w))"
)
_EMAIL = re.compile(
    rf"(?<!{_LOCAL}){_LOCAL}+?(?:@|&#(?:64|[xX]40);|%40|&commat;){_LABEL}(?:\.{_LABEL})*\.{_TLD}"
)
#: The at sign and the dot as people spell them to hide an address from harvesters:
#: ``jo(at)ex.com``, ``jo [at] ex [dot] com``, ``jo{at}ex{dot}com`` (bracketed words only:
#: a bare "at" or "dot" is ordinary English).
_AT_WORD = re.compile(r"[ \t]*[(\[{<][ \t]*(?i:at)[ \t]*[)\]}>][ \t]*")
_DOT_WORD = re.compile(r"[ \t]*[(\[{<][ \t]*(?i:dot)[ \t]*[)\]}>][ \t]*")
_DOT = rf"(?:\.|{_DOT_WORD.pattern})"
_OBFUSCATED_EMAIL = re.compile(
    rf"(?<!{_LOCAL}){_LOCAL}+?{_AT_WORD.pattern}{_LABEL}(?:{_DOT}{_LABEL})*{_DOT}{_TLD}"
)
#: 13 to 19 digits, optionally grouped by single spaces or hyphens (how cards are written).
_CARD = re.compile(r"(?<![\d\-.])\d(?:[ \-.]?\d){12,18}(?![\d\-])")
#: Two letters, two check digits, then up to 30 letters/digits in groups of any size.
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
#: Where a phone number can be: six or more digits with the separators numbers are written
#: with (a leading ``+`` or bracket kept), at most 40 characters.
_PHONE_RUN = re.compile(r"[+(]*\d(?:[ \t().\-/]{0,3}\d){5,20}\)?")
#: ``123-45-6789``, or ``123 45 6789`` not inside a longer run of spaced digit groups.
_SSN = re.compile(r"(?<![\d\-])(?:\d{3}-\d{2}-\d{4}|(?<!\d )\d{3} \d{2} \d{4}(?! \d))(?![\d\-])")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)")
#: Hex groups and colons with at least two colons (``::1``, ``2001:db8::1``, full form), not
#: inside a word (``std::vector``, ``Note::``); ``ipaddress`` decides what is an address
#: (``12:30:45`` is not) and one without a digit (``a::b``, ``dead::beef``) is taken for code.
_IPV6 = re.compile(
    r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?:\.\d{1,3}){3})?(?![\w:])"
)


_PLACEHOLDER = re.compile(rf"<(?:{'|'.join(PiiKind)})_\d{{1,9}}>")  # as Pseudonyms writes it

#: Three digits anywhere: fewer, and no phone, card, IBAN or SSN can be in the text (e-mail
#: and IP addresses, whose finders are one cheap pattern each, are always looked for).
_DIGITS = re.compile(r"\d(?:\D*\d){2}")
_NEEDS_NO_DIGITS = frozenset({PiiKind.EMAIL, PiiKind.IP, PiiKind.PERSON})


class PiiOptions(BaseModel):
    """What a monitor run masks: the kinds, the regions of national phone formats, the
    countries of street addresses, and the NER model that finds names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kinds: tuple[PiiKind, ...] = Field(default=DEFAULT_KINDS, min_length=1)
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS
    #: The countries whose street addresses are recognised (``pyap2`` knows US, CA, GB).
    address_countries: tuple[str, ...] = ADDRESS_COUNTRIES
    #: A spaCy pipeline: a folder (saved with ``nlp.to_disk``) or an installed package's
    #: name (``en_core_web_sm``). Needed for PERSON; loaded once per process.
    ner_model: str | None = Field(default=None, min_length=1)
    #: The model's entity labels that are masked, and as which kind.
    ner_labels: dict[str, PiiKind] = Field(
        default_factory=lambda: {k: PiiKind(v) for k, v in DEFAULT_NER_LABELS.items()},
        min_length=1,
    )

    @field_validator("address_countries")
    @classmethod
    def _known_countries(cls, countries: tuple[str, ...]) -> tuple[str, ...]:
        bad = [c for c in countries if c.upper() not in ADDRESS_COUNTRIES]
        if bad:
            raise ValueError(
                f"no street address rules for {', '.join(map(repr, bad))}: the address "
                f"finder knows {', '.join(ADDRESS_COUNTRIES)} (an NER model's labels can add "
                "others: ner_labels)"
            )
        return tuple(c.upper() for c in countries)

    @field_validator("ner_labels")
    @classmethod
    def _label_kinds(cls, labels: dict[str, PiiKind]) -> dict[str, PiiKind]:
        bad = [f"{label}: {kind.value}" for label, kind in labels.items() if kind not in _TEXTUAL]
        if bad:
            raise ValueError(
                f"an NER label can be masked as PERSON or ADDRESS only, not {', '.join(bad)} "
                "(the other kinds have validated finders)"
            )
        return labels

    @model_validator(mode="after")
    def _model_for_names(self) -> PiiOptions:
        if PiiKind.PERSON in self.kinds and self.ner_model is None:
            raise ValueError(
                "masking PERSON (personal names) needs an NER model: set ner_model to a spaCy "
                "pipeline's folder or installed package name, and install the extra: "
                f"pip install 'evalrunner[ner]' ({SPACY_REQUIREMENT})"
            )
        if PiiKind.PERSON in self.kinds and PiiKind.PERSON not in self.ner_labels.values():
            raise ValueError(
                "masking PERSON (personal names) but no label of ner_labels maps to it: add "
                'the label the model gives names, such as "PERSON": "PERSON"'
            )
        return self

    @field_validator("phone_regions")
    @classmethod
    def _known_regions(cls, regions: tuple[str, ...]) -> tuple[str, ...]:
        known = phonenumbers.SUPPORTED_REGIONS
        bad = [r for r in regions if r.upper() not in known]
        if bad:
            raise ValueError(
                f"unknown phone region(s) {', '.join(map(repr, bad))}: give ISO 3166 "
                "two-letter codes such as 'US', 'GB', 'DE'"
            )
        return tuple(r.upper() for r in regions)


@dataclass(frozen=True, order=True)
class Finding:
    """One span of PII in a text: ``text[start:end]``, its kind and its normalised value
    (what decides that two spellings are the same value)."""

    start: int
    end: int
    kind: PiiKind
    value: str


@dataclass
class Pseudonyms:
    """The placeholders of one case: the same value always gets the same one, a new value
    the next number of its kind. Make one per case and mask every text of the case with it
    (:meth:`PiiMasker.mask`); the table itself never leaves the process."""

    _by_value: dict[tuple[PiiKind, str], str] = field(default_factory=dict)
    _numbers: dict[PiiKind, int] = field(default_factory=dict)
    #: Placeholders typed into the case's texts (a user writing ``<EMAIL_1>``): no masked
    #: value gets one, or the judge would read the two as one value.
    _typed: set[str] = field(default_factory=set)

    def reserve(self, *texts: str) -> None:
        """Keep the placeholders typed in ``texts``: give every text of a case before masking."""
        self._typed.update(m.group() for t in texts if "<" in t for m in _PLACEHOLDER.finditer(t))

    def placeholder(self, kind: PiiKind, value: str) -> str:
        if (kind, value) not in self._by_value:
            found = None
            while found is None or found in self._typed:
                number = self._numbers[kind] = self._numbers.get(kind, 0) + 1
                found = f"<{kind.value}_{number}>"
            self._by_value[(kind, value)] = found
        return self._by_value[(kind, value)]

    @property
    def counts(self) -> dict[str, int]:
        """How many distinct values of each kind were masked (for the case's notes)."""
        return dict(sorted(Counter(kind.value for kind, _ in self._by_value).items()))


class PiiMasker:
    """Finds and masks PII with the options given; build one per run and reuse it (the
    phone metadata loads once per process, on first use)."""

    def __init__(self, options: PiiOptions | None = None) -> None:
        self.options = options or PiiOptions()
        self._kinds = frozenset(self.options.kinds)
        # The NER model loads here, once per process and model, so a missing extra or model
        # fails before anything is read, not on the first case.
        wanted = {k: v for k, v in self.options.ner_labels.items() if v in self._kinds}
        self._entities: EntityFinder | None = None
        if self.options.ner_model is not None and wanted:
            self._entities = load_entity_finder(self.options.ner_model, wanted)

    def find(self, text: str) -> list[Finding]:
        """Every PII span in ``text``, in order, none overlapping (the higher-priority kind,
        then the longer span, wins an overlap)."""
        # Phones, cards, IBANs and SSNs need digits; most answers have few, and the phone
        # matcher is the costly finder.
        # The finders read a folded copy: other scripts' digits, typeset dashes and spaces
        # and the full-width at sign as their ASCII forms, one character for one, so each
        # span found is the same span of ``text`` ("4111\u00a01111 ..." is still a card),
        # without the characters that render as nothing (mapped back at the end).
        text, where = visible(folded(text))
        kinds = self._kinds if _DIGITS.search(text) else self._kinds & _NEEDS_NO_DIGITS
        # names (and any address labels) come from the NER model, below
        candidates = [
            f
            for kind in _PRIORITY
            if kind in kinds and kind in _FINDERS
            for f in _FINDERS[kind](self, text)
        ]
        rank = {kind: i for i, kind in enumerate(_PRIORITY)}
        if self._entities is not None:
            candidates.extend(
                Finding(start, end, PiiKind(kind), value)
                for start, end, kind, value in self._entities.find(text)
                if kind in self._kinds
            )
        candidates.sort(key=lambda f: (rank[f.kind], f.start - f.end, f.start))
        taken: list[Finding] = []
        for finding in candidates:
            if all(finding.end <= t.start or finding.start >= t.end for t in taken):
                taken.append(finding)
            elif finding.kind in _TEXTUAL:
                taken.extend(list(_outside(finding, taken, text)))
        if where is not None:
            taken = [replace(f, start=where[f.start], end=where[f.end - 1] + 1) for f in taken]
        return sorted(taken)

    def mask(self, text: str, pseudonyms: Pseudonyms | None = None) -> str:
        """``text`` with each PII span replaced by its placeholder from ``pseudonyms`` (a
        fresh table when none is given: numbering then starts at 1 for this text alone)."""
        table = pseudonyms if pseudonyms is not None else Pseudonyms()
        findings = self.find(text)
        if not findings:
            return text
        table.reserve(text)
        parts: list[str] = []
        at = 0
        for finding in findings:
            parts.append(text[at : finding.start])
            parts.append(table.placeholder(finding.kind, finding.value))
            at = finding.end
        parts.append(text[at:])
        return "".join(parts)

    # -- finders, one per kind: candidates by pattern, kept only when the validator agrees --

    def _emails(self, text: str) -> Iterator[Finding]:
        if _AT.search(text):
            for m in _EMAIL.finditer(text):
                yield Finding(
                    m.start(), m.end(), PiiKind.EMAIL, _email_value(_AT.sub("@", m.group()))
                )
        if _AT_WORD.search(text):
            for m in _OBFUSCATED_EMAIL.finditer(text):
                plain = _DOT_WORD.sub(".", _AT_WORD.sub("@", m.group()))
                yield Finding(m.start(), m.end(), PiiKind.EMAIL, _email_value(plain))

    def _cards(self, text: str) -> Iterator[Finding]:
        for m in _CARD.finditer(text):
            separators = set(re.sub(r"\d", "", m.group()))
            if "." in separators and (separators != {"."} or m.group().count(".") < 2):
                continue  # dots group a card only alone and more than once (not 12.3456...)
            digits = re.sub(r"[ \-.]", "", m.group())
            if 13 <= len(digits) <= 19 and luhn.is_valid(digits):
                yield Finding(m.start(), m.end(), PiiKind.CARD, digits)

    def _ibans(self, text: str) -> Iterator[Finding]:
        for m in _IBAN.finditer(text):
            # The pattern may run on into a following code ("... 00 AB12"): the IBAN is the
            # longest prefix, ending on a character, that its checksum and length accept.
            raw = m.group()
            for end in range(len(raw), 14, -1):
                if raw[end - 1] == " ":
                    continue
                compact = raw[:end].replace(" ", "")
                if stdnum_iban.is_valid(compact):
                    yield Finding(m.start(), m.start() + end, PiiKind.IBAN, compact)
                    break

    def _ssns(self, text: str) -> Iterator[Finding]:
        for m in _SSN.finditer(text):
            digits = re.sub(r"\D", "", m.group())
            if stdnum_ssn.is_valid(digits):
                yield Finding(m.start(), m.end(), PiiKind.SSN, digits)

    def _addresses(self, text: str) -> Iterator[Finding]:
        for start, end, value in find_addresses(text, self.options.address_countries):
            yield Finding(start, end, PiiKind.ADDRESS, value)

    def _ips(self, text: str) -> Iterator[Finding]:
        for pattern in (_IPV4, _IPV6):
            for m in pattern.finditer(text):
                if pattern is _IPV6 and not any(c.isdigit() for c in m.group()):
                    continue
                try:
                    address = ipaddress.ip_address(m.group())
                except ValueError:
                    continue
                yield Finding(m.start(), m.end(), PiiKind.IP, address.compressed)

    def _phones(self, text: str) -> Iterator[Finding]:
        # The matcher costs ~0.1 ms per character per region over a whole text; it runs
        # only on the runs of digits and separators long enough to hold a phone number
        # (with a character of context each side), which most texts have few of.
        seen: set[tuple[int, int]] = set()
        for run in _PHONE_RUN.finditer(text):
            start = max(run.start() - 1, 0)
            chunk = text[start : run.end() + 1]
            for region in self.options.phone_regions:
                for m in phonenumbers.PhoneNumberMatcher(
                    chunk, region, phonenumbers.Leniency.VALID
                ):
                    span = (start + m.start, start + m.end)
                    if span in seen:
                        continue
                    seen.add(span)
                    e164 = phonenumbers.format_number(m.number, phonenumbers.PhoneNumberFormat.E164)
                    yield Finding(span[0], span[1], PiiKind.PHONE, e164)


_FINDERS = {
    PiiKind.EMAIL: PiiMasker._emails,
    PiiKind.CARD: PiiMasker._cards,
    PiiKind.IBAN: PiiMasker._ibans,
    PiiKind.SSN: PiiMasker._ssns,
    PiiKind.IP: PiiMasker._ips,
    PiiKind.PHONE: PiiMasker._phones,
    PiiKind.ADDRESS: PiiMasker._addresses,
}


def _email_value(address: str) -> str:
    """What decides that two spellings are one address: lower case, the domain in its IDNA
    (``xn--``) form, so ``jörg@exämple.de`` and ``jörg@xn--exmple-cua.de`` are one."""
    local, _, domain = address.lower().rpartition("@")
    try:
        domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        pass  # a label IDNA refuses (too long): the address as written, lower-cased
    return f"{local}@{domain}"


def _outside(finding: Finding, taken: list[Finding], text: str) -> Iterator[Finding]:
    """The parts of ``finding`` that no finding in ``taken`` covers and that hold a letter
    or a digit, as findings of the same kind and value (an address around a phone number is
    masked as ``<ADDRESS_1> <PHONE_1>``, not left whole)."""
    at = finding.start
    for other in sorted(t for t in taken if t.end > finding.start and t.start < finding.end):
        if other.start > at:
            yield from _piece(finding, at, other.start, text)
        at = max(at, other.end)
    if at < finding.end:
        yield from _piece(finding, at, finding.end, text)


def _piece(finding: Finding, start: int, end: int, text: str) -> Iterator[Finding]:
    while start < end and not text[start].isalnum():
        start += 1
    while end > start and not text[end - 1].isalnum():
        end -= 1
    if start < end:
        yield Finding(start, end, finding.kind, finding.value)


@functools.cache
def default_masker() -> PiiMasker:
    """The masker with the default options, built once (it holds no state of a run)."""
    return PiiMasker()


def mask_pii(text: str) -> str:
    """``text`` with every e-mail, phone, card, IBAN, IP address, SSN and street address (the
    default kinds: names need a model, :class:`PiiOptions`) replaced by a typed
    placeholder, numbered within this text (``"mail a@b.io"`` → ``"mail <EMAIL_1>"``).
    To keep one numbering across the texts of a case, use :func:`mask_case`."""
    return default_masker().mask(text)


class MaskedCase(BaseModel):
    """The texts of one interaction, masked with one placeholder table, and what was masked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    answer: str | None = None
    contexts: list[str] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    #: Distinct values masked, by kind (``{"EMAIL": 1, "PHONE": 2}``): the case's note.
    masked: dict[str, int] = Field(default_factory=dict)


def mask_case(
    question: str,
    answer: str | None = None,
    contexts: Iterable[str] = (),
    turns: Iterable[Turn] = (),
    masker: PiiMasker | None = None,
) -> MaskedCase:
    """An interaction's question, answer, contexts and conversation turns masked with one
    table, so an address the user gave and the answer repeats is ``<EMAIL_1>`` in both."""
    masker = masker or default_masker()
    table = Pseudonyms()
    contexts, turns = list(contexts), list(turns)
    table.reserve(question, answer or "", *contexts, *(t.content for t in turns))
    return MaskedCase(
        question=masker.mask(question, table),
        answer=None if answer is None else masker.mask(answer, table),
        contexts=[masker.mask(c, table) for c in contexts],
        turns=[t.model_copy(update={"content": masker.mask(t.content, table)}) for t in turns],
        masked=table.counts,
    )


def mask_test_case(case: TestCase, masker: PiiMasker | None = None) -> TestCase:
    """A suite case (a monitor interaction as the ``logged`` target reads it) with every text
    a judge or a report would see masked: question, answer, contexts, expected answer and
    contexts, prior turns, and the turns of a conversation, all with one table. A note says
    what was masked (kinds and counts, never values)."""
    masker = masker or default_masker()
    table = Pseudonyms()
    table.reserve(case.model_dump_json())
    masked = _mask_fields(case, masker, table)
    if table.counts:
        what = ", ".join(f"{n} {kind}" for kind, n in table.counts.items())
        masked = masked.model_copy(update={"notes": [*masked.notes, f"PII masked: {what}"]})
    return masked


def _mask_fields(case: TestCase, masker: PiiMasker, table: Pseudonyms) -> TestCase:
    def text(value: str | None) -> str | None:
        return None if value is None else masker.mask(value, table)

    def texts(values: list[str] | None) -> list[str] | None:
        return None if values is None else [masker.mask(v, table) for v in values]

    update: dict[str, Any] = {
        "question": masker.mask(case.question, table),
        "expected_answer": text(case.expected_answer),
        "answer": text(case.answer),
        "contexts": texts(case.contexts),
        "expected_contexts": texts(case.expected_contexts),
        "conversation": [
            t.model_copy(update={"content": masker.mask(t.content, table)})
            for t in case.conversation
        ],
        "turns": [_mask_fields(turn, masker, table) for turn in case.turns],
    }
    return case.model_copy(update=update)


def pii_options(raw: Any) -> PiiOptions:
    """Options from configuration (cdk.json, a project file, a CLI flag's JSON), with a
    :class:`~evalrunner.errors.ConfigError` naming what is wrong."""
    from pydantic import ValidationError

    try:
        return PiiOptions.model_validate(raw or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'pii'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(
            f"PII masking options are not valid: {problems} (kinds: "
            f"{', '.join(k.value for k in PiiKind)})"
        ) from exc


#: The deployed monitor's masking (set by the stack from cdk.json ``monitor.pii``): the
#: options as JSON, or ``off``. Unset: masking with the default options (on by default).
ENV_PII = "EVALRUNNER_MONITOR_PII"


def masker_from_env(env: Mapping[str, str]) -> PiiMasker | None:
    """The monitor function's masker (None: masking turned off in cdk.json)."""
    raw = (env.get(ENV_PII) or "").strip()
    if raw.lower() == "off":
        return None
    if not raw:
        return default_masker()
    try:
        options = json.loads(raw)
    except ValueError:
        raise ConfigError(
            f"{ENV_PII}: not JSON ({raw[:80]!r}); the stack sets it from cdk.json monitor.pii, "
            "redeploy it"
        ) from None
    return PiiMasker(pii_options(options))
