"""Personal names (and whatever else an NER model labels) in production text, for
:mod:`evalrunner.privacy`'s PERSON kind.

Names have no pattern and no checksum: only a named-entity model finds them. This module
runs a spaCy pipeline (the ``ner`` extra: ``pip install 'evalrunner[ner]'``) that the user
names in the masking options (``ner_model``): a folder saved with ``nlp.to_disk`` (a trained
pipeline, or a blank one with an ``entity_ruler`` of known names) or an installed pipeline
package (``en_core_web_sm``). Nothing is downloaded: spaCy's model packages come from its
own release site, which a deployment may not reach, so the model is the user's to provide.
How well names are found is the model's: ``en_core_web_sm`` finds most Western names in
running English text and misses many others; a name the model misses stays visible.

The pipeline loads once per process and model (:func:`load_entity_finder`); the components a
name does not need (tagger, parser, lemmatizer) are left out of each call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from evalrunner.errors import ConfigError

if TYPE_CHECKING:
    from spacy.language import Language

#: The extra's pin (pyproject.toml ``ner``), named in the errors that ask for it.
SPACY_REQUIREMENT = "spacy==3.8.18"
#: The labels spaCy's English (OntoNotes: PERSON) and multilingual (WikiNER: PER) models
#: give personal names, masked as PERSON unless the options say otherwise.
DEFAULT_NER_LABELS: Mapping[str, str] = {"PERSON": "PERSON", "PER": "PERSON"}
_MARKUP = re.compile(r"[<>\[\]|]")
_LINE_BREAK = re.compile(r"(?<![\r\n])\r?\n(?![\r\n])")
#: The most characters given to the model at once (bench/RESULTS.md, "PII masking: the
#: audit": spaCy's NER architecture peaks at ~3.3 MiB per KB, so ~330 MB for a piece).
PIECE_CHARS = 100_000
#: Components of spaCy's trained pipelines that named entities do not need.
_NOT_NEEDED = ("tagger", "parser", "lemmatizer", "attribute_ruler", "morphologizer", "senter")


class EntityFinder:
    """A loaded spaCy pipeline and the entity labels to report, as ``(start, end, kind,
    value)`` spans of a text (``value``: the entity's words in lower case, so ``Jane Doe`` and
    ``jane  doe`` are one name)."""

    def __init__(self, nlp: Language, labels: Mapping[str, str]) -> None:
        self.nlp = nlp
        self.labels = dict(labels)

    def find(self, text: str) -> Iterator[tuple[int, int, str, str]]:
        if not text.strip():
            return
        # The model reads markup's brackets and bars as spaces, one character for one (so
        # its spans are the text's): the tokenizer keeps "<b>Jane" or "Doe](https" whole,
        # and no model finds a name inside such a token. A lone line break too: wrapped
        # text breaks a name where the line ends ("Jane\nDoe").
        text = _LINE_BREAK.sub(lambda m: " " * len(m.group()), _MARKUP.sub(" ", text))
        # The model is given bounded pieces, each cut at a line break or a sentence's end
        # where there is one: a statistical NER holds ~3 MiB per KB of its input, so a text
        # near spaCy's own limit (nlp.max_length, a million characters) would take ~3 GB.
        limit = min(self.nlp.max_length, PIECE_CHARS)
        at = 0
        while at < len(text):
            end = len(text) if len(text) - at <= limit else _cut(text, at, at + limit)
            for ent in self.nlp(text[at:end]).ents:
                kind = self.labels.get(ent.label_)
                if kind is not None and ent.text.strip():
                    value = " ".join(ent.text.split()).casefold()
                    yield at + ent.start_char, at + ent.end_char, kind, value
            at = end


def _cut(text: str, start: int, end: int) -> int:
    """Where a piece of ``text`` from ``start`` ends, at ``end`` at the latest: after its
    last line break, else its last sentence's end, else its last space (in the piece's
    second half, so pieces stay large), else at ``end``."""
    half = start + (end - start) // 2
    for mark in ("\n", ". ", " "):
        found = text.rfind(mark, half, end)
        if found >= 0:
            return found + len(mark)
    return end


def load_entity_finder(model: str, labels: Mapping[str, str]) -> EntityFinder:
    """The pipeline ``model`` (loaded once per process) with ``labels`` to report; a
    :class:`~evalrunner.errors.ConfigError` naming what to install or configure when spaCy or
    the model is missing."""
    nlp = load_pipeline(model)
    known = _labels(nlp)
    problem = None if known is None else label_problem(model, known, labels)
    if problem is not None:
        raise ConfigError(problem)
    return EntityFinder(nlp, labels)


def label_problem(model: str, known: set[str], labels: Mapping[str, str]) -> str | None:
    """Why the model, whose entity labels are ``known``, would mask nothing of a kind that
    ``labels`` maps to (None: every kind has a label the model gives)."""
    for kind in sorted(set(labels.values())):
        mapped = sorted(label for label, to in labels.items() if to == kind)
        if not known & set(mapped):
            return (
                f"the NER model {model!r} never labels an entity {', '.join(mapped)}, which "
                f"ner_labels masks as {kind}, so no {kind} would be masked (its labels: "
                f"{', '.join(sorted(known)) or 'none'}); map its label in ner_labels (such as "
                f'{{"{min(known, default="LABEL")}": "{kind}"}}), or give a model that labels them'
            )
    return None


def _labels(nlp: Language) -> set[str] | None:
    """Every entity label the pipeline can give (its recognizers' and rulers' labels); None
    when a component that sets entities does not say which (a custom component)."""
    known: set[str] = set()
    for name in nlp.pipe_names:
        if "doc.ents" not in nlp.get_pipe_meta(name).assigns:
            continue
        labels = getattr(nlp.get_pipe(name), "labels", None)
        if not isinstance(labels, tuple | list | set | frozenset):
            return None
        known.update(str(label) for label in labels)
    return known


@functools.cache
def load_pipeline(model: str) -> Language:
    """``spacy.load(model)``, once per process: a model takes seconds to load and is read-only
    afterwards, so every masker of a run (and every warm Lambda invocation) shares it."""
    try:
        import spacy
    except ImportError:
        raise ConfigError(
            f"masking personal names needs spaCy, which is not installed: "
            f"pip install 'evalrunner[ner]' ({SPACY_REQUIREMENT}); or leave PERSON out of the "
            "masking kinds"
        ) from None
    try:
        nlp = spacy.load(model, exclude=list(_NOT_NEEDED))
    except ImportError as exc:
        raise ConfigError(
            f"the NER model {model!r} for masking personal names needs a package that is not "
            f"installed ({exc}); install what the model's own package requires (spaCy's "
            "Japanese, Chinese, Korean and Thai pipelines each need a tokenizer package); the "
            "deployed monitor's image installs evalrunner's core and ner pins only"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the NER model {model!r} for masking personal names could not be loaded ({exc}); "
            "give ner_model as a spaCy pipeline's folder (saved with nlp.to_disk) or the name "
            "of an installed pipeline package such as en_core_web_sm"
        ) from None
    if not any("doc.ents" in nlp.get_pipe_meta(name).assigns for name in nlp.pipe_names):
        raise ConfigError(
            f"the spaCy pipeline {model!r} has no entity recognizer (its components: "
            f"{', '.join(nlp.pipe_names) or 'none'}); give a pipeline with an 'ner' or "
            "'entity_ruler' component"
        )
    return nlp
