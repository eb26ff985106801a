"""Contextual misinformation: the run's judge rewrites one chunk of a case's contexts with one
false fact, and the target must follow the context it was given or say that it conflicts.

Only meaningful for a target that *takes* its context in the request (a generation endpoint:
``target.openai.send_contexts``, ``target.contexts_field``); a RAG system that retrieves its
own context would never read the falsified chunk, so Prepare refuses the perturbation there
(:func:`check_misinformation`). The rewrite happens at Prepare, once per case, so every
iteration of the perturbed case reads the same falsified text and the manifest records it
(with the false fact) for the reports; the reply is schema-validated and cached like every
judge call, and which chunk is rewritten is drawn from the seed, so one seed gives one
perturbation.

The verdict is the ``Misinformation handled`` judge check
(:mod:`evalrunner.evaluators.misinformation`), which the flip analysis uses as the case's
verdict under this perturbation (:attr:`~evalrunner.suite.model.Perturbation.check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.errors import EventError
from evalrunner.judge.prompts import build, tagged
from evalrunner.perturb.spec import case_rng
from evalrunner.suite.model import Perturbation, TestCase

if TYPE_CHECKING:
    from evalrunner.judge.base import Judge
    from evalrunner.perturb.spec import PerturbationSpec

KIND = "misinformation"
#: The judge check that decides whether a case held under this perturbation.
CHECK = "Misinformation handled"
#: Judge calls Prepare makes at once (the judge's own limit still applies).
WORKERS = 8


class Rewrite(BaseModel):
    """The judge's reply: the chunk with one fact changed, and that fact stated."""

    model_config = ConfigDict(extra="ignore")

    rewritten: str = Field(min_length=1, description="The whole chunk, one fact changed.")
    false_fact: str = Field(min_length=1, description="The changed fact, as one sentence.")


_TASK = (
    "You write test data for a question-answering system. Rewrite the chunk inside <chunk> "
    "so that it states exactly ONE fact that is false: change a number, a date, a name, a "
    "duration or a yes/no in the sentence that the question inside <question> depends on, so "
    "that a reader answering from the rewritten chunk gives a different answer. Keep "
    "everything else word for word, keep the language and style, and make the false fact "
    "sound plausible (no hint that it was changed)."
)
_REPLY = (
    'Reply with one JSON object and nothing else: {"rewritten": "<the whole chunk, with the '
    'one fact changed>", "false_fact": "<the false fact as one short sentence>"}.'
)


def rewrite_messages(question: str, chunk: str) -> list[Any]:
    """The judge prompt that falsifies ``chunk`` (untrusted text, delimited)."""
    return build(_TASK, [tagged("question", question), tagged("chunk", chunk)], _REPLY)


def chosen_chunk(spec: PerturbationSpec, case: TestCase) -> int | None:
    """0-based index of the chunk to falsify: drawn from the seed and the case id among the
    non-blank chunks (same seed, same chunk, on every machine); None when there is none."""
    chunks = [i for i, c in enumerate(case.contexts or []) if c.strip()]
    if not chunks:
        return None
    return case_rng(spec.seed, KIND, case.case_id, "contexts").choice(chunks)


def misinform_case(case: TestCase, spec: PerturbationSpec, judge: Judge) -> TestCase | None:
    """The copy of ``case`` whose contexts carry one false fact, or None when the case has
    no context to falsify. A judge failure or a rewrite that changes nothing is recorded on
    the copy (``perturbation.error``): that case is reported as not perturbed, and the other
    cases still run."""
    index = chosen_chunk(spec, case)
    if index is None or case.contexts is None:
        return None
    from evalrunner.judge.base import JudgeError

    contexts = list(case.contexts)
    error = false_fact = None
    try:
        reply = judge.ask(
            rewrite_messages(case.question, contexts[index]),
            Rewrite,
            purpose="misinformation rewrite",
        ).value
    except JudgeError as exc:
        error = f"the judge could not rewrite contexts[{index}]: {exc.message}"
    else:
        if reply.rewritten.strip() == contexts[index].strip():
            error = f"the judge returned contexts[{index}] unchanged"
        else:
            contexts[index], false_fact = reply.rewritten, reply.false_fact
    name = spec.name or spec.kind
    return case.model_copy(
        update={
            "case_id": f"{case.case_id}~{name}",
            "contexts": contexts,
            "perturbation": Perturbation(
                of=case.case_id,
                kind=spec.kind,
                name=name,
                seed=spec.seed,
                original_question=case.question,
                context=error is None,
                false_fact=false_fact,
                chunk=index + 1,
                original_context=case.contexts[index],
                check=CHECK,
                error=error,
            ),
        }
    )


def misinform_all(
    cases: Sequence[TestCase], spec: PerturbationSpec, judge: Judge
) -> list[TestCase | None]:
    """:func:`misinform_case` for every case, in order, a few judge calls at a time (a
    Prepare of 500 cases must stay well inside the Lambda's 15 minutes)."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(lambda c: misinform_case(c, spec, judge), cases))


def check_misinformation(
    specs: Sequence[PerturbationSpec],
    *,
    has_judge: bool,
    target_kind: str,
    sends_contexts: str | None,
    any_contexts: bool,
) -> None:
    """Refuse a misinformation perturbation the run cannot carry out, naming what to set."""
    for i, spec in enumerate(specs):
        if spec.kind != KIND:
            continue
        where = f"perturbations[{i}] ({spec.name or spec.kind})"
        if not has_judge:
            raise EventError(
                f"{where}: the misinformation perturbation needs an LLM judge to rewrite the "
                "contexts; set 'judge' in the event (or --judge, or EVALRUNNER_JUDGE)"
            )
        if sends_contexts is None:
            raise EventError(
                f"{where}: the target (kind {target_kind!r}) does not take the case's contexts "
                "in its request, so a falsified chunk would never reach it; use an openai "
                "target with target.openai.send_contexts ('system' or 'user') or a url target "
                "with target.contexts_field"
            )
        if not any_contexts:
            raise EventError(
                f"{where}: no case of the suite has contexts to falsify; fill the "
                "retrieved_contexts column with the chunks the target should answer from"
            )
