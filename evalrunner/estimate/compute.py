"""The estimate of a run before it runs: how many case × iteration runs, the judge calls and
tokens the metrics would send (measured by building their prompts for a sample of the suite
against :class:`~evalrunner.estimate.dry_judge.DryJudge`), the GPU minutes, and the AWS cost
of the run deployed (``prices.json``).

Pure and cheap (no network, no model loaded): Prepare computes it for every run, so
summary.json records it beside the actual figures. A model evaluator that a run scores by
its judge when the model is missing (Toxicity) is counted as judged when its model is not
found on the machine estimating.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalrunner.estimate.dry_judge import DryJudge
from evalrunner.estimate.model import AwsCost, JudgeEstimate, RunEstimate
from evalrunner.estimate.prices import PriceTable, load_prices
from evalrunner.evaluators import Evaluator, Requirement
from evalrunner.evaluators.model_base import ModelEvaluator
from evalrunner.evaluators.registry import resolve
from evalrunner.event import RunEvent
from evalrunner.judge.base import CURRENT_CASE, CaseUsage, Judge
from evalrunner.models.hub import ModelHub
from evalrunner.pipeline.batching import batches, cases_per_task
from evalrunner.pipeline.conversations import scored_parts, scores
from evalrunner.pipeline.scoring import sample_of
from evalrunner.run import ManifestItem
from evalrunner.suite.model import Suite, TestCase, Turn
from evalrunner.targets.base import TargetResponse

log = logging.getLogger("evalrunner.estimate")

#: Cases whose prompts are built and counted; the rest are extrapolated from their mean.
SAMPLE_CASES = 8
#: Texts a model metric scores per case × iteration (the answer and what it is compared with).
TEXTS_PER_MODEL_METRIC = 2


@dataclass
class _DryServices:
    """What the estimate lends the evaluators it builds: the dry judge, and a model hub that
    loads nothing unless asked (a model evaluator is built only to see whether its model is
    here, and judged in its place when it is not)."""

    dry: DryJudge = field(default_factory=DryJudge)
    hub: ModelHub = field(default_factory=ModelHub)

    @property
    def judge(self) -> Judge | None:
        return self.dry

    @property
    def models(self) -> ModelHub:
        return self.hub


def judged_without_model(
    event: RunEvent, classes: Sequence[type[Evaluator]], services: _DryServices
) -> tuple[list[Evaluator], list[str]]:
    """The model evaluators a run with a judge scores by that judge, their model not being
    on this machine (Toxicity without detoxify), built with the dry judge so their calls
    are counted, and a note for each."""
    if _judge_model(event) is None:
        return [], []
    made: list[Evaluator] = []
    notes = []
    for cls in classes:
        if not (issubclass(cls, ModelEvaluator) and cls.judged_without_model):
            continue
        evaluator = cls.for_run(event.thresholds, event.evaluator_options.get(cls.name), services)
        if evaluator.model_present():
            continue
        made.append(evaluator)
        notes.append(
            f"{cls.name}: its model {evaluator.model_name()!r} is not on this machine, so a "
            "run scored here has the judge score it (those calls are counted; a deployed run "
            "whose GPU image has the model makes none)"
        )
    return made, notes


def stand_in(case: TestCase) -> TargetResponse:
    """The response the estimate judges for ``case``: its logged answer when the suite has
    one, else its expected answer and contexts (a target's answer is about as long as the
    answer it is expected to give, and retrieves about the chunks expected). A case that
    expects no chunk (an out-of-scope question, a refusal) is counted as retrieving none:
    on the demo, counting one chunk for those put the estimate 22 % over the run's calls."""
    if case.answer is not None:
        return TargetResponse(answer=case.answer, contexts=list(case.contexts or []))
    answer = case.expected_answer or case.question
    return TargetResponse(answer=answer, contexts=list(case.expected_contexts))


def transcript(conversation: TestCase) -> list[Turn]:
    """The conversation as the estimate imagines it played: each user turn answered by its
    stand-in (:func:`stand_in`), so conversation metrics build prompts of a run's length."""
    turns: list[Turn] = []
    for turn in conversation.turns:
        turns.append(Turn(role="user", content=turn.question))
        turns.append(Turn(role="assistant", content=stand_in(turn).answer))
    return turns


def sample_cases(cases: Sequence[TestCase], size: int = SAMPLE_CASES) -> list[TestCase]:
    """``size`` cases spread evenly over the suite (all of them when it is that small)."""
    if len(cases) <= size:
        return list(cases)
    step = len(cases) / size
    return [cases[int(i * step)] for i in range(size)]


def _judge_estimate(
    event: RunEvent, evaluators: list[Evaluator], cases: list[TestCase], services: _DryServices
) -> tuple[float, float, float, int]:
    """Mean calls, input tokens and output tokens per case × iteration, and the sample size."""
    calls = tokens_in = tokens_out = 0
    for case in cases:
        usage = CaseUsage()
        token = CURRENT_CASE.set(usage)
        try:
            # a conversation costs its turns' judge calls and its own (conversation metrics)
            for part in scored_parts(case):
                sample = sample_of(part, stand_in(part), event.max_text_chars)
                if part.is_conversation:  # as played: each turn answered by its stand-in
                    sample = sample.model_copy(update={"turns": transcript(part)})
                for evaluator in evaluators:
                    if scores(evaluator, part):
                        evaluator.evaluate(sample)
        finally:
            CURRENT_CASE.reset(token)
        calls += usage.usage.calls
        tokens_in += usage.usage.input_tokens
        tokens_out += usage.usage.output_tokens
    n = max(1, len(cases))
    return calls / n, tokens_in / n, tokens_out / n, len(cases)


def _judge_model(event: RunEvent) -> str | None:
    if event.judge is None:
        return None
    from evalrunner.judge.config import JudgeConfig

    return JudgeConfig.model_validate(event.judge).model_name


def estimate_run(
    event: RunEvent,
    suite: Suite,
    items: Sequence[ManifestItem],
    *,
    prices: PriceTable | None = None,
) -> RunEstimate:
    """The estimate of running ``event`` over ``suite`` as the manifest ``items`` (from
    :func:`evalrunner.pipeline.prepare.expand`)."""
    prices = prices or load_prices()
    a = prices.assumptions
    classes = [resolve(name) for name in event.metrics]
    n_items = len(items)
    notes = [
        "judge figures assume an empty judge cache and a different answer every iteration; "
        "answers the judge cache already holds cost nothing",
    ]
    judge_estimate: JudgeEstimate | None = None
    calls_per_item = 0.0
    judges = [c for c in classes if c.uses_judge(event.evaluator_options.get(c.name))]
    services = _DryServices()
    instead, instead_notes = judged_without_model(event, classes, services)
    notes += instead_notes
    if judges or instead:
        evaluators = [
            c.for_run(event.thresholds, event.evaluator_options.get(c.name), services)
            for c in judges
        ] + instead
        sampled = [item.case for item in items if item.iteration == 1]
        per_call, per_in, per_out, size = _judge_estimate(
            event, evaluators, sample_cases(sampled), services
        )
        calls_per_item = per_call
        model = _judge_model(event)
        calls = round(per_call * n_items)
        tokens_in = round(per_in * n_items)
        tokens_out = round(per_out * n_items)
        token_prices = prices.judge_prices(model)
        cost = (
            tokens_in / 1e6 * token_prices.per_million_input
            + tokens_out / 1e6 * token_prices.per_million_output
            if token_prices
            else None
        )
        judge_estimate = JudgeEstimate(
            model=model,
            sampled_cases=size,
            calls=calls,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost=None if cost is None else round(cost, 4),
        )
        if any(case.answer is None for case in sampled):
            notes.append(
                "prompts were built from the expected answers and contexts, standing in for "
                "the target's (not called by the estimate)"
            )
        if model is None:
            notes.append("no judge is configured: a run skips the judge metrics (give --judge)")
        elif token_prices is None:
            notes.append(f"prices.json lists no token prices for judge model {model!r}")

    model_metrics = sum(1 for c in classes if c.requires is Requirement.GPU_BATCH)
    scored_texts = n_items * model_metrics * TEXTS_PER_MODEL_METRIC
    # "scoring": "cpu" keeps the run on the Score Lambda (the event's choice, issue 29)
    gpu_metrics = model_metrics if event.scoring != "cpu" else 0
    gpu_minutes = (
        scored_texts / a.gpu_texts_per_second / 60 + a.gpu_job_overhead_minutes
        if gpu_metrics
        else 0.0
    )
    memory = a.lambda_memory_gb
    run_case_seconds = a.run_case_seconds_base + calls_per_item * a.judge_seconds_per_call
    gb_seconds = (
        memory.get("prepare", 1.0) * a.prepare_seconds
        + memory.get("run_case", 1.0) * run_case_seconds * n_items
        + memory.get("aggregate", 2.0)
        * (a.aggregate_seconds_base + a.aggregate_seconds_per_item * n_items)
    )
    # Map tasks, not cases, cost the invokes and the child executions' transitions
    n_tasks = len(batches(n_items, cases_per_task(event, n_items)))
    requests = 2 + n_tasks + (0 if gpu_metrics else 1)
    if not gpu_metrics:  # the Score Lambda runs (briefly when no model metric is chosen)
        gb_seconds += memory.get("score", 2.0) * (1.0 + scored_texts / a.score_texts_per_second_cpu)
    transitions = a.transitions_per_run + a.transitions_per_task * n_tasks
    puts = a.s3_puts_per_run + a.s3_puts_per_item * n_items
    # + the manifest, read once per run by each Lambda container (about one per slot)
    gets = a.s3_gets_per_run + a.s3_gets_per_item * n_items + min(n_tasks, event.max_concurrency)
    step_functions = transitions / 1000 * prices.step_functions.per_1000_transitions
    lambda_cost = (
        gb_seconds * prices.lambda_.per_gb_second
        + requests / 1e6 * prices.lambda_.per_million_requests
    )
    batch = gpu_minutes / 60 * prices.batch.per_instance_hour
    s3 = puts / 1000 * prices.s3.per_1000_put + gets / 1000 * prices.s3.per_1000_get
    aws = AwsCost(
        state_transitions=transitions,
        map_child_executions=n_tasks,
        lambda_requests=requests,
        lambda_gb_seconds=round(gb_seconds, 1),
        gpu_minutes=round(gpu_minutes, 2),
        s3_puts=puts,
        s3_gets=gets,
        step_functions=round(step_functions, 4),
        lambda_functions=round(lambda_cost, 4),
        batch=round(batch, 4),
        s3=round(s3, 4),
        total=round(step_functions + lambda_cost + batch + s3, 4),
    )
    if gpu_metrics:
        notes.append(
            f"GPU minutes: one {prices.batch.instance_type} Batch job, "
            f"{a.gpu_job_overhead_minutes:g} min start-up included"
        )
    return RunEstimate(
        cases=len(suite.cases),
        iterations=event.iterations,
        perturbations=len(event.perturbations),
        items=n_items,
        metrics=list(event.metrics),
        judge=judge_estimate,
        scored_texts=scored_texts,
        gpu_minutes=round(gpu_minutes, 2),
        aws=aws,
        prices_as_of=prices.as_of,
        region=prices.region,
        currency=prices.currency,
        notes=notes,
    )


__all__ = ["SAMPLE_CASES", "estimate_run", "sample_cases", "stand_in"]
