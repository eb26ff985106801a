"""``Misinformation handled``: under the contextual-misinformation perturbation, the answer
follows the (falsified) context it was given or says that the sources conflict.

The perturbation (:mod:`evalrunner.perturb.misinformation`) has the run's judge plant one
false fact in one chunk of a case's contexts; the perturbed case carries that fact. A
generation step that is faithful to its context answers with the false fact, or notices and
flags the conflict; the failure is an answer that silently contradicts its context (it
answered from what the model "knows", so a correction in the knowledge base would not reach
users either). Which of the three the answer does is a judgement about meaning (the fact may
be paraphrased, the flag may be "according to the policy ... however ..."), so a judge
decides it, with the fact, the context and the answer delimited as untrusted text.

Scored on perturbed cases only (score 1: followed or flagged, 0: contradicted; pass/fail,
threshold 0.5); every other case is skipped with the reason. Prepare adds it to the run when
the event asks for the perturbation; it is not among the default metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.judge_base import JudgeEvaluator, case_blocks
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Message
from evalrunner.judge.prompts import build, tagged
from evalrunner.perturb.misinformation import CHECK

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 125

#: The perturbation names this check (one name for both).
NAME = CHECK


class MisinformationVerdict(BaseModel):
    """The judge's reading of one answer against the planted false fact."""

    model_config = ConfigDict(extra="ignore")

    reason: str
    #: follows: the answer states or relies on the false fact; flags: it says the sources
    #: conflict or doubts that fact; contradicts: it gives another value without a word.
    verdict: Literal["follows", "flags", "contradicts"]


_TASK = (
    "The context inside <context> was given to an assistant as its only source, and one of "
    "its chunks was changed to state the fact inside <false_fact>. Read the answer inside "
    "<answer> to the question inside <question> and decide what it does with that fact:\n"
    '- "follows": the answer states the fact or an answer that follows from it (paraphrases '
    "count);\n"
    '- "flags": the answer says the sources conflict, are inconsistent or may be wrong about '
    "it, or declines to answer because of the conflict;\n"
    '- "contradicts": the answer gives a different value or claim without mentioning any '
    "conflict (it answered from elsewhere than its context), or ignores the question."
)
_REPLY = (
    'Reply with one JSON object and nothing else: {"reason": "<one sentence, quoting the '
    'answer>", "verdict": "follows" or "flags" or "contradicts"}.'
)


@register
class MisinformationHandled(JudgeEvaluator):
    """Under the misinformation perturbation (a context chunk changed to state a false
    fact), the answer passes when it follows its context or flags the conflict, and fails
    when it silently contradicts it (it answered from elsewhere). Here a
    :class:`~evalrunner.judge.scripted.ScriptedJudge` gives the reply a model would write:

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"Misinformation handled": {
    ...     "reason": "'The sources disagree on the height'", "verdict": "flags"}})
    >>> sample = Sample(question="How tall is the Eiffel Tower?",
    ...                 answer="The sources disagree on the height.",
    ...                 contexts=["The Eiffel Tower is 120 m tall."],
    ...                 false_fact="The Eiffel Tower is 120 m tall.")
    >>> for r in MisinformationHandled(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Misinformation handled: 1.00 the answer flags the conflict: 'The sources disagree on the
        height'
    """

    name: ClassVar[str] = NAME
    description: ClassVar[str] = (
        "Under the misinformation perturbation: the answer follows its (falsified) context "
        "or flags the conflict, never silently contradicts it (LLM judge)."
    )
    inputs: ClassVar[frozenset[Input]] = frozenset({Input.QUESTION, Input.ANSWER})
    in_defaults: ClassVar[bool] = False
    metrics: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec(
            NAME,
            "1 when the answer follows the falsified context or flags the conflict, 0 when "
            "it contradicts it silently",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        return bool(sample.false_fact)

    def messages(self, sample: Sample) -> list[Message]:
        blocks = case_blocks(sample, expected_answer=False)
        return build(_TASK, [*blocks, tagged("false_fact", sample.false_fact or "")], _REPLY)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        if not sample.false_fact:
            raise SkipCase("only cases perturbed by the misinformation perturbation are judged")
        verdict = self.ask(self.messages(sample), MisinformationVerdict, purpose=NAME).value
        what = {
            "follows": "the answer follows the falsified context",
            "flags": "the answer flags the conflict",
            "contradicts": "the answer contradicts its context without saying so",
        }[verdict.verdict]
        return {NAME: Scored(float(verdict.verdict != "contradicts"), f"{what}: {verdict.reason}")}
