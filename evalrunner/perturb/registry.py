"""The perturbators by kind, and how one is applied to a case.

A perturbed case is a new case of the run: its own id (``<original id>~<name>``), the
perturbed question (and, for ``context: true`` on a case with precomputed answers, the
perturbed retrieved contexts), and a :class:`~evalrunner.perturb.spec.Perturbation` linking it
to its original. Prepare puts it in the manifest like any case, so the Distributed Map runs it
with no change to the state machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from evalrunner.errors import EventError
from evalrunner.perturb import chars, misinformation, words
from evalrunner.perturb.spec import Perturbation, PerturbationSpec, case_rng
from evalrunner.suite.model import TestCase

Apply = Callable[[str, float, random.Random], str]


@dataclass(frozen=True)
class Perturbator:
    """One kind: what it does to a text, in what unit its intensity counts, and its default."""

    kind: str
    unit: Literal["characters", "words", "commas and word gaps", "y and z", "one context chunk"]
    default_intensity: float
    apply: Apply
    description: str
    #: The perturbation must change the answer (antonym): a flip is the expected outcome.
    expect_flip: bool = False
    #: Applied by Prepare with the run's judge, not by ``apply`` (misinformation: the
    #: question is kept, a context chunk is rewritten; see :mod:`.misinformation`).
    needs_judge: bool = False
    #: The metric whose verdict on the perturbed copy decides whether a case held (and that
    #: Prepare adds to the run); None: verdicts are compared with the original's.
    check: str | None = None


def _question_kept(text: str, intensity: float, rng: random.Random) -> str:
    """The question as it is (the misinformation perturbation changes a context chunk)."""
    return text


KINDS: dict[str, Perturbator] = {
    p.kind: p
    for p in (
        Perturbator(
            "char_replace",
            "characters",
            0.05,
            chars.char_replace,
            "letters replaced by a random other letter",
        ),
        Perturbator(
            "typos", "characters", 0.05, chars.typos, "letters replaced by a QWERTY neighbour"
        ),
        Perturbator(
            "char_insert", "characters", 0.05, chars.char_insert, "random letters inserted"
        ),
        Perturbator("char_delete", "characters", 0.05, chars.char_delete, "letters dropped"),
        Perturbator(
            "ocr", "characters", 0.1, chars.ocr, "characters OCR confuses (o→0, l→1, m→rn, ...)"
        ),
        Perturbator("yz_swap", "y and z", 1.0, chars.yz_swap, "y and z swapped (QWERTZ)"),
        Perturbator(
            "comma",
            "commas and word gaps",
            0.2,
            words.comma,
            "commas inserted between words and removed where they were",
        ),
        Perturbator("word_swap", "words", 0.2, words.word_swap, "neighbouring words swapped"),
        Perturbator(
            "synonym", "words", 1.0, words.synonym, "words replaced by a synonym (lexicon)"
        ),
        Perturbator(
            "antonym",
            "words",
            0.01,  # one word: one antonym already reverses the question
            words.antonym,
            "a word replaced by its antonym; must change the answer",
            expect_flip=True,
        ),
        Perturbator(
            "misinformation",
            "one context chunk",
            1.0,  # one chunk, one false fact: intensity has no effect
            _question_kept,
            "the run's judge rewrites one chunk of the case's contexts with one false fact; "
            "the answer must follow the context or flag the conflict (generation targets "
            "that are sent the contexts)",
            needs_judge=True,
            check=misinformation.CHECK,
        ),
    )
}


def kind_of(name: str) -> Perturbator:
    try:
        return KINDS[name]
    except KeyError:
        raise EventError(
            f"perturbations: unknown kind {name!r}; valid kinds: {', '.join(KINDS)}"
        ) from None


def resolve(specs: list[PerturbationSpec]) -> list[PerturbationSpec]:
    """The specs with intensity and name filled in; raises on an unknown kind or two
    perturbations of one name."""
    problems: list[str] = []
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec.kind] = counts.get(spec.kind, 0) + 1
    out: list[PerturbationSpec] = []
    for i, spec in enumerate(specs):
        if spec.kind not in KINDS:
            problems.append(
                f"perturbations[{i}].kind: unknown kind {spec.kind!r}; valid kinds: "
                f"{', '.join(KINDS)}"
            )
            continue
        intensity = (
            spec.intensity if spec.intensity is not None else KINDS[spec.kind].default_intensity
        )
        name = spec.name or (spec.kind if counts[spec.kind] == 1 else f"{spec.kind}@{intensity:g}")
        out.append(spec.model_copy(update={"intensity": intensity, "name": name}))
    seen: set[str] = set()
    for i, spec in enumerate(out):
        if spec.name in seen:
            problems.append(
                f"perturbations[{i}]: a second perturbation named {spec.name!r}; give each a "
                "different intensity, seed or name"
            )
        seen.add(spec.name or "")
    if problems:
        raise EventError(problems)
    return out


def perturb_text(text: str, spec: PerturbationSpec, case_id: str, field: str = "question") -> str:
    """``text`` under ``spec`` (resolved), for the case ``case_id``."""
    kind = kind_of(spec.kind)
    intensity = spec.intensity if spec.intensity is not None else kind.default_intensity
    return kind.apply(text, intensity, case_rng(spec.seed, spec.kind, case_id, field))


def perturb_case(case: TestCase, spec: PerturbationSpec) -> TestCase | None:
    """The perturbed copy of ``case``, or None when the perturbation changes nothing in it (no
    letter to replace, no word the lexicon knows): running it again would only measure the
    target's repeatability. Kinds that need the judge are applied by Prepare
    (:func:`evalrunner.perturb.misinformation.misinform_case`), never here."""
    if KINDS[spec.kind].needs_judge:
        raise ValueError(f"{spec.kind} is applied with the run's judge (misinform_case)")
    question = perturb_text(case.question, spec, case.case_id)
    contexts = case.contexts
    touched_context = False
    if spec.context and case.contexts is not None:
        contexts = [
            perturb_text(c, spec, case.case_id, f"contexts[{i}]")
            for i, c in enumerate(case.contexts)
        ]
        touched_context = contexts != case.contexts
    if question == case.question and not touched_context:
        return None
    name = spec.name or spec.kind
    return case.model_copy(
        update={
            "case_id": f"{case.case_id}~{name}",
            "question": question,
            "contexts": contexts,
            "perturbation": Perturbation(
                of=case.case_id,
                kind=spec.kind,
                name=name,
                intensity=spec.intensity,
                seed=spec.seed,
                original_question=case.question,
                expect_flip=KINDS[spec.kind].expect_flip,
                context=touched_context,
            ),
        }
    )
