"""Ragas side of the judge-call benchmark (run in the peers venv, not the project's).

Ragas' current metric API, ``ragas.metrics.collections`` (the old ``ragas.metrics`` names are
deprecated aliases): Faithfulness, AnswerRelevancy (strictness 3, with embeddings),
ContextPrecision (with reference), ContextRecall and ContextRelevance — Ragas has no
statement-based contextual relevancy; ContextRelevance (two judge prompts rating the joined
contexts 0–2) is its counterpart. Each metric's ``ascore`` runs on every case with a counting
fake ``InstructorBaseRagasLLM``: Ragas asks it for a pydantic ``response_model``, the fake
returns a filled instance (see common.fill) and records the prompt and the completion's
JSON. A deterministic hash-based embedding stands in for the embedding model (its calls are
counted apart; they are not judge calls).

A second run measures the older API that ``ragas.evaluate()`` still runs (``ragas.metrics``
Faithfulness, ResponseRelevancy, LLMContextPrecisionWithReference, LLMContextRecall,
ContextRelevance, each through ``single_turn_ascore`` as evaluate() calls it) with a counting
legacy ``BaseRagasLLM``. That API asks for Answer Relevancy's 3 questions as ONE request with
n=3 (as ChatOpenAI does; models without n get 3 requests), counted as one call whose output is
3 completions.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import math
import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-benchmark-never-used")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

common.install_socket_guard()

from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402
from ragas.metrics.collections import (  # noqa: E402
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    ContextRelevance,
    Faithfulness,
)

LEDGER = common.Ledger()


def count_for(schema: type, prompt: str) -> int:
    # statements of the answer (faithfulness), their NLI verdicts, the reference's
    # sentences (context recall): STATEMENTS_PER_TEXT each; the other answers hold no list
    return common.STATEMENTS_PER_TEXT


class CountingFakeLLM(InstructorBaseRagasLLM):
    def _answer(self, prompt: str, response_model):
        value = common.fill(response_model, count_for(response_model, prompt))
        LEDGER.record(response_model.__name__, prompt, common.dump(value), schema=response_model)
        return value

    def generate(self, prompt, response_model):
        return self._answer(prompt, response_model)

    async def agenerate(self, prompt, response_model):
        return self._answer(prompt, response_model)


class HashEmbeddings(BaseRagasEmbedding):
    """Deterministic 64-dimensional vectors from a hash of the text; no model, no network."""

    def _vector(self, text: str) -> list[float]:
        digest = hashlib.sha512(text.encode()).digest()
        vec = [b / 255 - 0.5 for b in digest]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_text(self, text, **kwargs):
        LEDGER.record_embedding([text])
        return self._vector(text)

    async def aembed_text(self, text, **kwargs):
        return self.embed_text(text)

    def embed_texts(self, texts, **kwargs):
        return [self.embed_text(t) for t in texts]

    async def aembed_texts(self, texts, **kwargs):
        return self.embed_texts(texts)


async def score_all(cases) -> tuple[dict, list]:
    llm, emb = CountingFakeLLM(), HashEmbeddings()
    metrics = {
        "Faithfulness": (
            Faithfulness(llm=llm),
            lambda c: dict(
                user_input=c["question"], response=c["answer"], retrieved_contexts=c["contexts"]
            ),
        ),
        "Answer Relevancy": (
            AnswerRelevancy(llm=llm, embeddings=emb),
            lambda c: dict(user_input=c["question"], response=c["answer"]),
        ),
        "Contextual Precision": (
            ContextPrecision(llm=llm),
            lambda c: dict(
                user_input=c["question"],
                reference=c["expected_answer"],
                retrieved_contexts=c["contexts"],
            ),
        ),
        "Contextual Recall": (
            ContextRecall(llm=llm),
            lambda c: dict(
                user_input=c["question"],
                reference=c["expected_answer"],
                retrieved_contexts=c["contexts"],
            ),
        ),
        "Contextual Relevancy": (
            ContextRelevance(llm=llm),
            lambda c: dict(user_input=c["question"], retrieved_contexts=c["contexts"]),
        ),
    }
    scores: dict[str, list] = {}
    errors: list[str] = []
    for name, (metric, kwargs) in metrics.items():
        for case in cases:
            LEDGER.metric, LEDGER.case_id, LEDGER.case = name, case["id"], case
            try:
                result = await metric.ascore(**kwargs(case))
                scores.setdefault(name, []).append(result.value)
            except Exception as exc:  # recorded, never turned into a number
                errors.append(f"{name} / {case['id']}: {type(exc).__name__}: {exc}"[:300])
    return scores, errors


# --- the legacy API (ragas.metrics + evaluate()) -------------------------------------------

#: The output model of the PydanticPrompt being run: the legacy LLM gets only text.
OUTPUT_MODEL: contextvars.ContextVar = contextvars.ContextVar("output_model", default=None)


def _watch_output_models() -> None:
    """Wrap PydanticPrompt.generate_multiple so the fake knows which model to fill (this
    changes no call: it only sets a context variable around the original)."""
    from ragas.prompt.pydantic_prompt import PydanticPrompt

    original = PydanticPrompt.generate_multiple

    async def generate_multiple(self, *args, **kwargs):
        token = OUTPUT_MODEL.set(self.output_model)
        try:
            return await original(self, *args, **kwargs)
        finally:
            OUTPUT_MODEL.reset(token)

    PydanticPrompt.generate_multiple = generate_multiple


def legacy_llm():
    from langchain_core.outputs import Generation, LLMResult
    from ragas.llms.base import BaseRagasLLM

    class CountingLegacyLLM(BaseRagasLLM):
        def _result(self, prompt, n: int) -> LLMResult:
            text = prompt.to_string()
            model = OUTPUT_MODEL.get()
            # ContextRelevance's raw templates ask for a bare 0/1/2 rating
            reply = (
                "2" if model is None else common.dump(common.fill(model, count_for(model, text)))
            )
            LEDGER.record(
                (model.__name__ if model else "rating") + (f" (n={n})" if n > 1 else ""),
                text,
                reply * n,  # one request, n completions
                # no schema beside the prompt: this API writes it into the prompt text
            )
            info = {"finish_reason": "stop"}
            return LLMResult(
                generations=[[Generation(text=reply, generation_info=info) for _ in range(n)]]
            )

        def generate_text(self, prompt, n=1, temperature=0.01, stop=None, callbacks=None):
            return self._result(prompt, n)

        async def agenerate_text(self, prompt, n=1, temperature=0.01, stop=None, callbacks=None):
            return self._result(prompt, n)

        def is_finished(self, response) -> bool:
            return True

    return CountingLegacyLLM()


def legacy_embeddings(vectors: HashEmbeddings):
    from ragas.embeddings.base import BaseRagasEmbeddings

    class LegacyHashEmbeddings(BaseRagasEmbeddings):
        def embed_query(self, text):
            return vectors.embed_text(text)

        def embed_documents(self, texts):
            return vectors.embed_texts(texts)

        async def aembed_query(self, text):
            return vectors.embed_text(text)

        async def aembed_documents(self, texts):
            return vectors.embed_texts(texts)

    return LegacyHashEmbeddings()


async def score_all_legacy(cases) -> tuple[dict, list]:
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics._answer_relevance import ResponseRelevancy
    from ragas.metrics._context_precision import LLMContextPrecisionWithReference
    from ragas.metrics._context_recall import LLMContextRecall
    from ragas.metrics._faithfulness import Faithfulness as LegacyFaithfulness
    from ragas.metrics._nv_metrics import ContextRelevance as LegacyContextRelevance
    from ragas.run_config import RunConfig

    _watch_output_models()
    llm, emb = legacy_llm(), legacy_embeddings(HashEmbeddings())
    metrics = {
        "Faithfulness": LegacyFaithfulness(),
        "Answer Relevancy": ResponseRelevancy(),
        "Contextual Precision": LLMContextPrecisionWithReference(),
        "Contextual Recall": LLMContextRecall(),
        "Contextual Relevancy": LegacyContextRelevance(),
    }
    for metric in metrics.values():  # what evaluate() does before scoring
        metric.llm = llm
        if hasattr(metric, "embeddings"):
            metric.embeddings = emb
        metric.init(RunConfig())
    scores: dict[str, list] = {}
    errors: list[str] = []
    for name, metric in metrics.items():
        for case in cases:
            LEDGER.metric, LEDGER.case_id, LEDGER.case = name, case["id"], case
            sample = SingleTurnSample(
                user_input=case["question"],
                response=case["answer"],
                reference=case["expected_answer"],
                retrieved_contexts=case["contexts"],
            )
            try:
                scores.setdefault(name, []).append(await metric.single_turn_ascore(sample))
            except Exception as exc:  # recorded, never turned into a number
                errors.append(f"{name} / {case['id']}: {type(exc).__name__}: {exc}"[:300])
    return scores, errors


def main() -> None:
    global LEDGER
    cases = common.load_cases()
    scores, errors = asyncio.run(score_all(cases))
    runs = {
        "default (collections API)": {
            "summary": LEDGER.summary(len(cases)),
            "scores": scores,
            "errors": errors,
        }
    }
    LEDGER = common.Ledger()
    try:
        scores, errors = asyncio.run(score_all_legacy(cases))
        runs["legacy ragas.metrics / evaluate() API, n=3 in one request"] = {
            "summary": LEDGER.summary(len(cases)),
            "scores": scores,
            "errors": errors,
        }
    except Exception as exc:  # say why, never a number
        runs["legacy ragas.metrics / evaluate() API, n=3 in one request"] = {
            "unavailable": f"{type(exc).__name__}: {exc}"[:300]
        }
    result = {
        "tool": "ragas",
        "versions": {
            p: version(p)
            for p in ("ragas", "instructor", "langchain-core", "langchain-community", "pydantic")
        },
        "python": sys.version.split()[0],
        "runs": runs,
    }
    common.emit(result)


if __name__ == "__main__":
    main()
