"""evalrunner side of the judge-call benchmark (run in the project venv).

The five RAG metrics through ``resolve(name)()`` with a counting fake judge, the way
``pipeline.run_case`` runs them: one judge for the run, bound to every judge evaluator; per
case, a ``CaseUsage`` in ``CURRENT_CASE`` and the metrics evaluated one after the other.

Two fakes, which must agree:
- ``CountingJudge`` (the primary numbers): a ``Judge`` subclass that answers each ``schema``
  with a filled instance (see common.fill; list lengths from the schema's
  ``expected_counts`` where the prompt fixes them) and caches by (messages, schema) like the
  real client: a hit costs nothing. The prompt counted is what the real client sends: the
  messages with its reply-format line (``with_reply_format``: a filled-in example) added to
  the system message. The schema the client sends as structured output (``response_format``)
  is counted apart, as ``schema_tokens``, as for the peers.
- ``FakeTransportJudge`` (a cross-check): the real client (``evalrunner.judge._client``
  ``_BaseJudge`` with its in-memory ``ResponseCache``, single-flight, repair and accounting)
  with only the transport (``_complete``) faked; its calls come from the client's own
  per-case ``CaseUsage``.

Scenarios: the five metrics together on each case (first run, empty cache); each metric
alone (a fresh judge per metric); and a re-run of the same cases with the warm cache.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))
os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-benchmark-never-used")

import common  # noqa: E402

common.install_socket_guard()

from pydantic import BaseModel  # noqa: E402

from evalrunner.evaluators import Sample, resolve  # noqa: E402
from evalrunner.judge.base import (  # noqa: E402
    CURRENT_CASE,
    CaseUsage,
    Judge,
    JudgeReply,
    JudgeUsage,
    Message,
    record_case_usage,
)

# what the real client sends: the reply-format line appended to the system message, and the
# schema as structured output beside the prompt
from evalrunner.judge.reply_format import with_reply_format  # noqa: E402


def _prompt_text(messages: list[Message]) -> str:
    return "\n\n".join(m.content for m in messages)


def _answer(schema: type[BaseModel]) -> str:
    counts = dict(getattr(schema, "expected_counts", {}) or {})
    return common.dump(common.fill(schema, common.STATEMENTS_PER_TEXT, counts=counts))


class CountingJudge(Judge):
    model = "counting-fake"

    def __init__(self, ledger: common.Ledger) -> None:
        super().__init__()
        self.ledger = ledger
        self.cache: dict[tuple[str, str], str] = {}

    def ask(self, messages, schema, *, purpose, logprobs=False):
        sent = with_reply_format(list(messages), schema)
        prompt = _prompt_text(sent)
        key = (
            json.dumps([m.model_dump() for m in messages], sort_keys=True),
            json.dumps(
                {"name": schema.__name__, "json": schema.model_json_schema()}, sort_keys=True
            ),
        )
        usage = JudgeUsage()
        cached = key in self.cache
        if cached:
            text = self.cache[key]
            usage.cached = 1
        else:
            text = self.cache[key] = _answer(schema)
            usage.calls = 1
            usage.input_tokens = round(common.est_tokens(prompt))
            usage.output_tokens = round(common.est_tokens(text))
        self.ledger.record(purpose, prompt, text, cached=cached, schema=schema)
        self._account(usage)
        record_case_usage(purpose, usage)
        return JudgeReply(value=schema.model_validate_json(text), usage=usage, cached=cached)


def fake_transport_judge() -> Judge:
    """The real client with a fake ``_complete``; None-safe if its internals moved."""
    from evalrunner.judge._client import Completion, _BaseJudge
    from evalrunner.judge.cache import ResponseCache
    from evalrunner.judge.config import JudgeConfig

    class FakeTransportJudge(_BaseJudge):
        endpoint = "the benchmark's fake transport"

        def _complete(self, request):
            text = _answer(request.schema)
            return Completion(
                text=text,
                input_tokens=round(common.est_tokens(_prompt_text(request.messages))),
                output_tokens=round(common.est_tokens(text)),
            )

    config = JudgeConfig.model_validate(
        {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "counting-fake"}}
    )
    return FakeTransportJudge(config, cache=ResponseCache(None))


def sample_of(case: dict[str, Any]) -> Sample:
    return Sample(
        question=case["question"],
        case_id=case["id"],
        expected_answer=case["expected_answer"],
        expected_contexts=case["expected_contexts"],
        answer=case["answer"],
        contexts=case["contexts"],
    )


def resolve_metric(name: str):
    """``resolve(name)``; while the catalog does not import the judge metrics yet, importing
    their module registers them."""
    try:
        return resolve(name)
    except Exception:
        import evalrunner.evaluators.judge_rag  # noqa: F401

        return resolve(name)


def run_cases(judge: Judge, names: tuple[str, ...], cases, ledger: common.Ledger) -> dict:
    """Like pipeline.run_case: evaluators built once with the run's judge, run per case."""
    evaluators = [resolve_metric(name)(judge=judge) for name in names]
    scores: dict[str, list] = {}
    errors: list[str] = []
    case_usage: list[dict] = []
    for case in cases:
        usage = CaseUsage()
        token = CURRENT_CASE.set(usage)
        try:
            for evaluator in evaluators:
                ledger.metric, ledger.case_id, ledger.case = evaluator.name, case["id"], case
                for result in evaluator.evaluate(sample_of(case)):
                    scores.setdefault(result.metric, []).append(result.score)
                    if result.status != "scored":
                        errors.append(f"{result.metric} / {case['id']}: {result.reason}"[:300])
        finally:
            CURRENT_CASE.reset(token)
        case_usage.append(usage.as_dict())
    return {"scores": scores, "errors": errors, "case_usage": case_usage}


def _usage_per_case(case_usage: list[dict]) -> dict[str, float]:
    n = len(case_usage)
    keys = ("calls", "cached", "input_tokens", "output_tokens")
    return {k: sum(u[k] for u in case_usage) / n for k in keys}


def main() -> None:
    cases = common.load_cases()
    n = len(cases)
    runs: dict[str, Any] = {}

    ledger = common.Ledger()
    judge = CountingJudge(ledger)
    together = run_cases(judge, common.FIVE, cases, ledger)
    runs["five together (first run, empty cache)"] = {
        "summary": ledger.summary(n),
        "scores": together["scores"],
        "errors": together["errors"],
        "client_case_usage": _usage_per_case(together["case_usage"]),
    }

    rerun_ledger = common.Ledger()
    judge.ledger = rerun_ledger
    rerun = run_cases(judge, common.FIVE, cases, rerun_ledger)
    runs["five together, re-run with the warm cache"] = {
        "summary": rerun_ledger.summary(n),
        "errors": rerun["errors"],
        "client_case_usage": _usage_per_case(rerun["case_usage"]),
    }

    alone_ledger = common.Ledger()
    errors: list[str] = []
    for name in common.FIVE:
        errors += run_cases(CountingJudge(alone_ledger), (name,), cases, alone_ledger)["errors"]
    runs["each metric alone (fresh cache per metric)"] = {
        "summary": alone_ledger.summary(n),
        "errors": errors,
    }

    try:
        real = fake_transport_judge()
        check_ledger = common.Ledger()  # unused by this judge: its CaseUsage is the count
        checked = run_cases(real, common.FIVE, cases, check_ledger)
        runs["cross-check: real client, fake transport"] = {
            "client_case_usage": _usage_per_case(checked["case_usage"]),
            "by_purpose": checked["case_usage"][0]["by_purpose"],
            "errors": checked["errors"],
        }
    except Exception as exc:  # the client's internals moved: say so, the primary run stands
        runs["cross-check: real client, fake transport"] = {
            "unavailable": f"{type(exc).__name__}: {exc}"[:300]
        }

    from importlib.metadata import version

    result = {
        "tool": "evalrunner",
        "versions": {p: version(p) for p in ("evalrunner", "pydantic")},
        "python": sys.version.split()[0],
        "runs": runs,
    }
    common.emit(result)


if __name__ == "__main__":
    main()
