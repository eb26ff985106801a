"""The 1–5 rubrics, as data: one :class:`Rubric` per evaluator of the family.

Each becomes a registered evaluator (:mod:`.one_to_five`) that asks the judge for one
integer from 1 to 5 per case with a few-shot prompt, and reports ``<name>`` (the raw score,
threshold 3) and ``<name> normalised`` ((score − 1) / 4, primary, threshold 0.5). Adding a
rubric is adding an entry here (and its test); its evaluator and metric names come from
``name``, and they must stay stable once released (thresholds, gates and reports name them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalrunner.evaluators.base import Input

__all__ = ["RUBRICS", "Example", "Rubric"]


@dataclass(frozen=True)
class Example:
    """One worked example of a few-shot prompt: the texts it shows (delimited like a real
    case's, in the order question, expected answer, context, answer), then the reply."""

    score: int
    reason: str
    question: str | None = None
    expected_answer: str | None = None
    context: tuple[str, ...] | None = None
    answer: str | None = None


@dataclass(frozen=True)
class Rubric:
    """What one 1–5 evaluator measures and how the judge is told to score it."""

    #: The evaluator's Python class name (importable from :mod:`..judge_quality`).
    class_name: str
    #: The evaluator's name and its raw metric's name (``<name> normalised`` is the other).
    name: str
    description: str
    #: Case inputs without which the case is skipped.
    inputs: frozenset[Input]
    #: Which case texts go into the prompt (those the case has).
    shows: frozenset[Input]
    #: What the metrics measure, for their descriptions.
    measures: str
    #: What the judge is asked to decide.
    task: str
    #: What each score means, from 5 down to 1.
    levels: Mapping[int, str]
    examples: tuple[Example, ...]
    #: Other names the evaluator answers to (PromptFlow's ``gpt_*`` metric names).
    aliases: tuple[str, ...] = ()


RUBRICS: tuple[Rubric, ...] = (
    Rubric(
        class_name="Groundedness",
        aliases=("gpt_groundedness", "gpt_groundness"),  # the HR plan spells it so
        name="Groundedness (1-5)",
        description="LLM judge, 1–5: does the answer follow from the retrieved context?",
        inputs=frozenset({Input.ANSWER, Input.CONTEXTS}),
        shows=frozenset({Input.QUESTION, Input.CONTEXTS, Input.ANSWER}),
        measures="the answer follows from the retrieved context",
        task=(
            "Decide how well the answer inside <answer> is entailed by the retrieved context "
            "inside <context>: only the context counts, not what you know."
        ),
        levels={
            5: "every claim of the answer follows from the context.",
            4: "the answer follows from the context except a minor detail.",
            3: "some claims follow from the context and some cannot be checked against it.",
            2: "most claims cannot be found in the context.",
            1: "the answer contradicts the context, or nothing in it comes from the context.",
        },
        examples=(
            Example(
                5,
                "The context states the warranty is two years, as the answer says.",
                question="How long is the warranty?",
                context=("All devices come with a two-year warranty.",),
                answer="The warranty lasts two years.",
            ),
            Example(
                1,
                "The context says Paris; the answer says Lyon.",
                question="Where is the head office?",
                context=("Our head office is in Paris.",),
                answer="The head office is in Lyon.",
            ),
            Example(
                3,
                "The opening hours come from the context; the parking claim does not.",
                question="When is the store open?",
                context=("The store is open 9am to 6pm on weekdays.",),
                answer="It is open 9am to 6pm on weekdays, and parking is free.",
            ),
        ),
    ),
    Rubric(
        class_name="Relevance",
        aliases=("gpt_relevance",),
        name="Relevance (1-5)",
        description="LLM judge, 1–5: does the answer address the question?",
        inputs=frozenset({Input.QUESTION, Input.ANSWER}),
        shows=frozenset({Input.QUESTION, Input.ANSWER}),
        measures="the answer addresses the question",
        task=(
            "Decide how well the answer inside <answer> addresses the main aspects of the "
            "question inside <question> (correctness is not rated here)."
        ),
        levels={
            5: "addresses every aspect of the question, nothing off-topic.",
            4: "addresses the question with a minor gap or a little off-topic content.",
            3: "addresses part of the question.",
            2: "barely touches the question.",
            1: "does not address the question at all.",
        },
        examples=(
            Example(
                5,
                "It answers both what the fee is and when it is charged.",
                question="What is the late fee and when is it charged?",
                answer="The late fee is $15, charged five days after the due date.",
            ),
            Example(
                1,
                "The question asks about refunds; the answer describes shipping.",
                question="How do I get a refund?",
                answer="We ship to over 40 countries within five business days.",
            ),
            Example(
                3,
                "It gives the price but not the delivery time the question also asks for.",
                question="How much does express delivery cost and how fast is it?",
                answer="Express delivery costs $12.",
            ),
        ),
    ),
    Rubric(
        class_name="Coherence",
        aliases=("gpt_coherence",),
        name="Coherence (1-5)",
        description="LLM judge, 1–5: do the answer's sentences fit together as a whole?",
        inputs=frozenset({Input.QUESTION, Input.ANSWER}),
        shows=frozenset({Input.QUESTION, Input.ANSWER}),
        measures="the answer reads as a coherent whole",
        task=(
            "Decide how coherent the answer inside <answer> is: whether its sentences fit "
            "together, follow a logical order and read naturally as a whole."
        ),
        levels={
            5: "perfectly coherent, well organised.",
            4: "mostly coherent, a small jump or awkward transition.",
            3: "partly coherent; some sentences do not connect.",
            2: "mostly incoherent.",
            1: "no coherence at all: unrelated or contradictory sentences.",
        },
        examples=(
            Example(
                5,
                "The steps are in order and each follows from the previous one.",
                question="How do I reset my password?",
                answer="Open Settings, choose Security, then click Reset password. You will "
                "receive an e-mail with a link to set the new one.",
            ),
            Example(
                1,
                "The sentences are unrelated to one another.",
                question="How do I reset my password?",
                answer="Bananas are yellow. Reset is a button. The sky was blue on Tuesday.",
            ),
            Example(
                3,
                "It starts with the steps but jumps to an unrelated topic midway.",
                question="How do I reset my password?",
                answer="Open Settings and choose Security. Our company was founded in 1998. "
                "Then click Reset password.",
            ),
        ),
    ),
    Rubric(
        class_name="Fluency",
        aliases=("gpt_fluency",),
        name="Fluency (1-5)",
        description="LLM judge, 1–5: grammar, word choice and readability of the answer.",
        inputs=frozenset({Input.ANSWER}),
        shows=frozenset({Input.QUESTION, Input.ANSWER}),
        measures="the answer is fluent",
        task=(
            "Decide how fluent the answer inside <answer> is: grammar, spelling, word choice "
            "and sentence structure (not its content)."
        ),
        levels={
            5: "flawless, natural language.",
            4: "fluent with a minor slip.",
            3: "understandable with several errors or awkward phrasing.",
            2: "hard to read: many errors.",
            1: "barely readable.",
        },
        examples=(
            Example(
                5,
                "Grammatical and natural.",
                question="What is the capital of Japan?",
                answer="The capital of Japan is Tokyo.",
            ),
            Example(
                1,
                "Broken grammar and word salad.",
                question="What is the capital of Japan?",
                answer="capital japan is the is tokyo the capital of city japan it",
            ),
            Example(
                3,
                "Understandable, with several grammar errors.",
                question="What is the capital of Japan?",
                answer="Capital of Japan are Tokyo, it have many peoples.",
            ),
        ),
    ),
    Rubric(
        class_name="Similarity",
        aliases=("gpt_similarity",),
        name="Similarity (1-5)",
        description="LLM judge, 1–5: does the answer say what the expected answer says?",
        inputs=frozenset({Input.ANSWER, Input.EXPECTED_ANSWER}),
        shows=frozenset({Input.QUESTION, Input.EXPECTED_ANSWER, Input.ANSWER}),
        measures="the answer matches the expected answer",
        task=(
            "Decide how similar in meaning the answer inside <answer> is to the expected "
            "answer inside <expected_answer>, given the question (wording does not matter)."
        ),
        levels={
            5: "same meaning, nothing missing or contradicting.",
            4: "same meaning, a minor detail missing or added.",
            3: "partly the same: some key information missing or different.",
            2: "mostly different.",
            1: "completely different or contradicting.",
        },
        examples=(
            Example(
                5,
                "Same fact in other words.",
                question="When was the company founded?",
                expected_answer="It was founded in 1998.",
                answer="The company dates back to 1998.",
            ),
            Example(
                1,
                "The year contradicts the expected answer.",
                question="When was the company founded?",
                expected_answer="It was founded in 1998.",
                answer="It was founded in 2005.",
            ),
            Example(
                3,
                "It has the year but misses the founder the expected answer names.",
                question="When and by whom was the company founded?",
                expected_answer="Maria Lopez founded it in 1998.",
                answer="It was founded in 1998.",
            ),
        ),
    ),
    Rubric(
        class_name="RetrievalScore",
        aliases=("gpt_retrieval_score",),
        name="Retrieval score (1-5)",
        description="LLM judge, 1–5: is the retrieved context relevant to the question?",
        inputs=frozenset({Input.QUESTION, Input.CONTEXTS}),
        shows=frozenset({Input.QUESTION, Input.CONTEXTS}),
        measures="the retrieved context is relevant to the question",
        task=(
            "Decide how relevant the retrieved chunks inside <context> are to the question "
            "inside <question>: whether they hold what is needed to answer it, with the most "
            "relevant chunks first."
        ),
        levels={
            5: "the chunks hold everything needed, the most relevant first, little noise.",
            4: "the chunks hold what is needed, with some irrelevant ones or poor order.",
            3: "the chunks hold part of what is needed.",
            2: "the chunks are mostly irrelevant; a hint at best.",
            1: "nothing in the chunks helps answer the question.",
        },
        examples=(
            Example(
                5,
                "The first chunk answers the question directly.",
                question="What is the return window?",
                context=("Items can be returned within 30 days.", "Returns are free."),
            ),
            Example(
                1,
                "No chunk mentions returns.",
                question="What is the return window?",
                context=("Our stores open at 9am.", "We were founded in 1998."),
            ),
            Example(
                3,
                "One chunk is relevant but comes after two irrelevant ones and lacks the period.",
                question="What is the return window?",
                context=(
                    "We were founded in 1998.",
                    "Our stores open at 9am.",
                    "Returns are free.",
                ),
            ),
        ),
    ),
)
