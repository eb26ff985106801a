"""DeepEval side of the judge-bound wall time (bench/bench_judge_wall.py); peers venv.

As a DeepEval user runs it: ``deepeval.evaluate()`` on the cases with the five RAG metrics
(defaults: async, include_reason=True), judged by DeepEval's own OpenAI model (``GPTModel``,
its default model name) pointed at the loopback judge, ``AsyncConfig(max_concurrent=N)``
(N = DeepEval's default, 20, unless given). Usage: wall_deepeval.py CASES.json BASE_URL [N]
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_NO_INSPECT_PROMPT", "1")

from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
from deepeval.metrics import (
    AnswerRelevancyMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    FaithfulnessMetric,
)
from deepeval.models import GPTModel
from deepeval.test_case import LLMTestCase


def main() -> None:
    cases = json.loads(open(sys.argv[1], encoding="utf-8").read())["cases"]
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    model = GPTModel(base_url=sys.argv[2], api_key="sk-dummy-benchmark-never-used")
    metrics = [
        FaithfulnessMetric(model=model),
        AnswerRelevancyMetric(model=model),
        ContextualPrecisionMetric(model=model),
        ContextualRecallMetric(model=model),
        ContextualRelevancyMetric(model=model),
    ]
    tests = [
        LLMTestCase(
            input=c["question"],
            actual_output=c["actual_answer"],
            expected_output=c["expected_answer"],
            retrieval_context=json.loads(c["retrieved_contexts"]),
        )
        for c in cases
    ]
    result = evaluate(
        tests,
        metrics,
        async_config=AsyncConfig(max_concurrent=concurrency),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    scored = errored = 0
    for test in result.test_results:
        for m in test.metrics_data or []:
            if m.error or m.score is None:
                errored += 1
            else:
                scored += 1
    print("RESULT " + json.dumps({"scored": scored, "errored": errored}))


if __name__ == "__main__":
    main()
