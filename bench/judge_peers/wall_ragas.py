"""Ragas side of the judge-bound wall time (bench/bench_judge_wall.py); peers venv.

As a Ragas user runs it: ``ragas.evaluate()`` on the cases with its five RAG metrics
(Faithfulness, ResponseRelevancy, LLMContextPrecisionWithReference, LLMContextRecall,
ContextRelevance: the metrics evaluate() runs), the judge a LangChain ``ChatOpenAI`` and the
embeddings LangChain ``OpenAIEmbeddings`` pointed at the loopback judge (the pairing Ragas'
docs show for evaluate()), ``RunConfig(max_workers=N)`` (Ragas' default is 16; the bench
passes the same N every tool gets). Usage: wall_ragas.py CASES.json BASE_URL [N]
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
warnings.simplefilter("ignore", DeprecationWarning)

from langchain_openai import ChatOpenAI, OpenAIEmbeddings  # noqa: E402
from ragas import EvaluationDataset, evaluate  # noqa: E402
from ragas.metrics import (  # noqa: E402
    ContextRelevance,
    Faithfulness,
    LLMContextPrecisionWithReference,
    LLMContextRecall,
    ResponseRelevancy,
)
from ragas.run_config import RunConfig  # noqa: E402


def main() -> None:
    cases = json.loads(open(sys.argv[1], encoding="utf-8").read())["cases"]
    url = sys.argv[2]
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    key = "sk-dummy-benchmark-never-used"
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=key)
    # check_embedding_ctx_length=False: no tiktoken download (the namespace has no network)
    emb = OpenAIEmbeddings(base_url=url, api_key=key, check_embedding_ctx_length=False)
    data = EvaluationDataset.from_list(
        [
            {
                "user_input": c["question"],
                "response": c["actual_answer"],
                "reference": c["expected_answer"],
                "retrieved_contexts": json.loads(c["retrieved_contexts"]),
            }
            for c in cases
        ]
    )
    metrics = [
        Faithfulness(),
        ResponseRelevancy(),
        LLMContextPrecisionWithReference(),
        LLMContextRecall(),
        ContextRelevance(),
    ]
    result = evaluate(
        data,
        metrics=metrics,
        llm=llm,
        embeddings=emb,
        run_config=RunConfig(max_workers=workers),
        show_progress=False,
    )
    frame = result.to_pandas()
    scored = errored = 0
    for m in metrics:
        for value in frame[m.name]:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                errored += 1
            else:
                scored += 1
    print("RESULT " + json.dumps({"scored": scored, "errored": errored}))


if __name__ == "__main__":
    main()
