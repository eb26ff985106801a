"""DeepEval side of the judge-call benchmark (run in the peers venv, not the project's).

The five metrics (FaithfulnessMetric, AnswerRelevancyMetric, ContextualPrecisionMetric,
ContextualRecallMetric, ContextualRelevancyMetric) with their defaults (async mode, eval mode
"llm", include_reason=True), each measured on every case with a counting fake
``DeepEvalBaseLLM``. DeepEval passes the pydantic ``schema`` it wants to ``generate``; the fake
returns a filled instance (see common.fill) and records the prompt and the completion's JSON.
A second pass with include_reason=False shows DeepEval's cheapest configuration.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "0")
os.environ.setdefault("DEEPEVAL_EVAL_MODE", "llm")
os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-benchmark-never-used")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

common.install_socket_guard()

from deepeval.metrics import (  # noqa: E402
    AnswerRelevancyMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    FaithfulnessMetric,
)
from deepeval.models import DeepEvalBaseLLM  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402

LEDGER = common.Ledger()


def count_for(schema: type, prompt: str) -> int:
    """List length the fake answers with, per DeepEval schema (see common's docstring)."""
    case = LEDGER.case or {}
    module = schema.__module__
    if schema.__name__ == "Truths":  # truths of every retrieved chunk at once
        return common.STATEMENTS_PER_TEXT * common.chunks_in(prompt, case)
    if "contextual_precision" in module and schema.__name__ == "Verdicts":
        return len(case["contexts"])  # one verdict per retrieved chunk
    # claims / statements of the answer, their verdicts, the expected answer's sentences
    # (contextual recall), the statements of one chunk (contextual relevancy, one call each)
    return common.STATEMENTS_PER_TEXT


class CountingFakeLLM(DeepEvalBaseLLM):
    def __init__(self) -> None:
        super().__init__("counting-fake")

    def load_model(self):
        return self

    def get_model_name(self) -> str:
        return "counting-fake"

    def _answer(self, prompt, schema):
        text = prompt if isinstance(prompt, str) else "\n".join(str(p) for p in prompt)
        if schema is None:
            raise RuntimeError("DeepEval asked without a schema: the fake cannot answer")
        value = common.fill(schema, count_for(schema, text))
        LEDGER.record(schema.__name__, text, common.dump(value), schema=schema)
        return value

    def generate(self, prompt, schema=None, **kwargs):
        return self._answer(prompt, schema)

    async def a_generate(self, prompt, schema=None, **kwargs):
        return self._answer(prompt, schema)


def metrics(model, include_reason: bool):
    return {
        "Faithfulness": FaithfulnessMetric(model=model, include_reason=include_reason),
        "Answer Relevancy": AnswerRelevancyMetric(model=model, include_reason=include_reason),
        "Contextual Precision": ContextualPrecisionMetric(
            model=model, include_reason=include_reason
        ),
        "Contextual Recall": ContextualRecallMetric(model=model, include_reason=include_reason),
        "Contextual Relevancy": ContextualRelevancyMetric(
            model=model, include_reason=include_reason
        ),
    }


def run(include_reason: bool) -> dict:
    global LEDGER
    LEDGER = common.Ledger()
    cases = common.load_cases()
    model = CountingFakeLLM()
    scores: dict[str, list[float]] = {}
    errors: list[str] = []
    for name, metric in metrics(model, include_reason).items():
        for case in cases:
            LEDGER.metric, LEDGER.case_id, LEDGER.case = name, case["id"], case
            test_case = LLMTestCase(
                input=case["question"],
                actual_output=case["answer"],
                expected_output=case["expected_answer"],
                retrieval_context=case["contexts"],
            )
            try:
                scores.setdefault(name, []).append(metric.measure(test_case, _show_indicator=False))
            except Exception as exc:  # recorded, never turned into a number
                errors.append(f"{name} / {case['id']}: {type(exc).__name__}: {exc}"[:300])
    return {"summary": LEDGER.summary(len(cases)), "scores": scores, "errors": errors}


def main() -> None:
    result = {
        "tool": "deepeval",
        "versions": {p: version(p) for p in ("deepeval", "pydantic")},
        "python": sys.version.split()[0],
        "runs": {
            "default (include_reason=True)": run(include_reason=True),
            "include_reason=False": run(include_reason=False),
        },
    }
    common.emit(result)


if __name__ == "__main__":
    main()
