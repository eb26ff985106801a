"""The rubrics of the judge RAG metrics: what ``verdict: true`` means for each (data)."""

from __future__ import annotations

# --- rubrics (what verdict: true means) ---------------------------------------------------------

ANSWER_CHECKS_RUBRIC = (
    "The statements in <statements> come from an answer to the question in <question>. For "
    "each: supported is true when the retrieved <context> states it or it follows directly "
    "from it, false when the context contradicts it or lacks it (use only the context, not "
    "your own knowledge); relevant is true when it addresses the question or helps to answer "
    "it (a pertinent caveat counts), false when off-topic or filler."
)
CONTRADICTION_RUBRIC = (
    "The statements in <statements> come from an answer; the retrieved <context> does not "
    "state them. For each, verdict true when the context contradicts it (states something "
    "incompatible with it), false when the context is merely silent about it (use only the "
    "context, not your own knowledge)."
)
ANSWER_RELEVANCY_RUBRIC = (
    "The statements in <statements> come from an answer to the question in <question>. For "
    "each, verdict true when it addresses the question or helps to answer it (a pertinent "
    "caveat counts), false when off-topic or filler."
)
CONTEXTUAL_PRECISION_RUBRIC = (
    "The chunks in <context> were retrieved, in this order, for the question in <question>; "
    "the expected answer is in <expected_answer>. For each chunk, verdict true when it helps "
    "to arrive at the expected answer, false otherwise."
)
CONTEXTUAL_RECALL_RUBRIC = (
    "Verdict true when a chunk in <context> states the statement or it follows directly from "
    "one, false otherwise; use only the context, not your own knowledge."
)
CONTEXTUAL_RELEVANCY_RUBRIC = (
    "Verdict true when it is relevant to the question in <question> (helps to answer it), "
    "false otherwise."
)
HALLUCINATION_RUBRIC = (
    "The texts inside <expected_contexts> are trusted reference facts for the answer inside "
    "<answer>. For each expected context, decide whether the answer is consistent with it: "
    "verdict true when the answer agrees with it or does not address it; false when the "
    "answer states something that contradicts it."
)
