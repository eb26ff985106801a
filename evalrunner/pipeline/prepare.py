"""Prepare: validate the event and the suite, expand cases × iterations, write the manifest.

Nothing is written to the bucket until both the event and the suite have been validated, so a
bad input leaves no half-written run behind.
"""

from __future__ import annotations

import logging
import posixpath
import secrets
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evalrunner.errors import SuiteError
from evalrunner.estimate.compute import estimate_run
from evalrunner.estimate.model import RunEstimate
from evalrunner.evaluators import Evaluator, Requirement, Sample, resolve
from evalrunner.evaluators.score_part import ScoreStepPart
from evalrunner.event import RunEvent, concurrency_notice
from evalrunner.event_schema import EventSpec
from evalrunner.judge.config import JudgeConfig
from evalrunner.perturb import misinformation
from evalrunner.perturb.registry import KINDS, perturb_case
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.pipeline.batching import batches, cases_per_task
from evalrunner.pipeline.context import Settings, default_judge
from evalrunner.pipeline.conversations import scored_parts, scores
from evalrunner.pipeline.scoring import sample_of
from evalrunner.reports.writers.publish import claim_report_prefix
from evalrunner.run import ManifestItem, PrepareOutput, RunConfig
from evalrunner.storage import RunStore
from evalrunner.suite import Suite
from evalrunner.suite.model import TestCase
from evalrunner.suite.readers import read_suite
from evalrunner.targets.factory import target_name
from evalrunner.targets.logged import missing_answers
from evalrunner.targets.registry import target_class

if TYPE_CHECKING:
    from evalrunner.judge.base import Judge

#: Builds the run's judge from the event's judge object (Prepare needs it only for the
#: perturbations that the judge applies: misinformation).
JudgeMaker = Callable[[JudgeConfig], "Judge"]


def utcnow() -> datetime:
    """The clock a run's start time and report prefix come from (tests freeze it)."""
    return datetime.now(UTC)


def new_run_id(now: datetime) -> str:
    return f"{now:%y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def expand(
    suite: Suite,
    iterations: int,
    perturbations: Sequence[PerturbationSpec] = (),
    judge: Judge | None = None,
) -> list[ManifestItem]:
    """Every case once per iteration, iteration-major so early results cover every case;
    each case followed by its perturbed copies (one per perturbation that changes it; a
    hand-written variant is not perturbed again). A perturbed copy is perturbed once, so
    all its iterations ask the same question (and read the same falsified context: the
    judge-applied kinds are asked once per case here, with ``judge``)."""
    originals = [c for c in suite.cases if c.perturbation is None]
    by_judge: dict[tuple[int, str], TestCase | None] = {}
    for j, spec in enumerate(perturbations, 1):
        if KINDS[spec.kind].needs_judge:
            if judge is None:
                raise ValueError(f"perturbation {spec.kind} needs the run's judge")
            done = misinformation.misinform_all(originals, spec, judge)
            by_judge.update({(j, c.case_id): p for c, p in zip(originals, done, strict=True)})
    cases: list[tuple[str, TestCase]] = []
    for case in suite.cases:
        cases.append((f"c{case.index + 1:05d}", case))
        if case.perturbation is not None or case.is_conversation:
            continue  # a conversation is not perturbed (README, Conversations: limits)
        for j, spec in enumerate(perturbations, 1):
            perturbed = (
                by_judge[(j, case.case_id)]
                if KINDS[spec.kind].needs_judge
                else perturb_case(case, spec)
            )
            if perturbed is not None:
                cases.append((f"c{case.index + 1:05d}-p{j}", perturbed))
    counts = Counter(c.case_id for _, c in cases)
    clash = sorted(i for i, n in counts.items() if n > 1)
    if clash:
        raise SuiteError(
            f"perturbed case ids collide with ids of the suite: {', '.join(clash[:5])}; "
            "rename those cases or name the perturbation differently",
            source=suite.source,
        )
    return [
        ManifestItem(item_id=f"{label}-i{it}", iteration=it, case=case)
        for it in range(1, iterations + 1)
        for label, case in cases
    ]


def applicable_defaults(
    suite: Suite, names: list[str], configured: Collection[str] = ()
) -> list[str]:
    """The default evaluators that have something to score in this suite, plus any the
    event configured through evaluator_options (configuring one is asking for it)."""
    kept = {n for n in names if n in configured}
    undecided = [n for n in names if n not in kept]
    classes = {n: resolve(n) for n in undecided}  # looked up once, not once per part
    # Part by part, each part's sample built once and dropped after it (not kept for the
    # whole suite), until every evaluator has found a part it applies to.
    for part in (p for case in suite.cases for p in scored_parts(case)):
        if not undecided:
            break
        sample: Sample | None = None
        for name, cls in [(n, classes[n]) for n in undecided]:
            if not scores(cls, part):
                continue
            if sample is None:
                sample = sample_of(part)
            if cls.applies_to(sample):
                kept.add(name)
                undecided.remove(name)
    return [n for n in names if n in kept] or names


def check_cases(suite: Suite, event: RunEvent) -> None:
    """Let each selected evaluator refuse cases it could never score (all at once)."""
    # Only evaluators with a check of their own can refuse a case: the others are not asked,
    # so a run of them builds no sample for it.
    checking = [
        cls
        for cls in (resolve(name) for name in event.metrics)
        if cls.check_case.__func__ is not Evaluator.check_case.__func__  # type: ignore[attr-defined]
    ]
    # Part by part, each part's sample built once for every evaluator and dropped after it;
    # the problems are listed evaluator by evaluator, as they always were.
    found: list[list[str]] = [[] for _ in checking]
    for case in (p for c in suite.cases for p in scored_parts(c)) if checking else ():
        sample: Sample | None = None
        for cls, problems in zip(checking, found, strict=True):
            if not scores(cls, case):
                continue
            if sample is None:
                sample = sample_of(case)
            for problem in cls.check_case(sample):
                row = f"row {case.row}" if case.row is not None else f"case {case.index + 1}"
                problems.append(f"{row} (id {case.case_id}), {cls.name}: {problem}")
    problems = [p for per_evaluator in found for p in per_evaluator]
    if problems:
        shown = "\n".join(f"  - {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise SuiteError(
            f"{len(problems)} case(s) cannot be evaluated:\n{shown}{more}", source=suite.source
        )


def check_perturbations(suite: Suite, event: RunEvent) -> None:
    """Refuse a context perturbation the suite gives nothing to perturb: only cases whose
    answers were computed elsewhere carry retrieved contexts (a live target retrieves its
    own)."""
    if any(case.contexts for case in suite.cases):
        return
    for i, spec in enumerate(event.perturbations):
        if spec.context:
            raise SuiteError(
                f"perturbations[{i}] ({spec.name}): context is true, but no case of the suite "
                "has retrieved contexts to perturb (only cases with actual_answer and "
                "retrieved_contexts do); drop 'context' to perturb the questions",
                source=suite.source,
            )


def settle(event: RunEvent, suite: Suite) -> RunEvent:
    """The event as it will run on this suite: default metrics narrowed to those that apply,
    the check of a judge-applied perturbation added, and every case checked by the
    evaluators that will score it. Raises on bad cases."""
    misinformation.check_misinformation(
        event.perturbations,
        has_judge=event.judge is not None,
        target_kind=event.target_kind,
        sends_contexts=target_class(event.target).sends_contexts(event.target),
        any_contexts=any(case.contexts for case in suite.cases),
    )
    if event.target_kind == "logged":
        missing = missing_answers(suite.cases)
        if missing:
            shown = ", ".join(missing[:20]) + (" ..." if len(missing) > 20 else "")
            raise SuiteError(
                f"the run calls no target (target.logged), but {len(missing)} case(s) carry "
                f"no logged answer: {shown}; fill answer_from_system (or actual_answer) or "
                "give a target",
                source=suite.source,
            )
    if not event.metrics_explicit:
        metrics = applicable_defaults(suite, event.metrics, event.evaluator_options)
        event = event.model_copy(update={"metrics": metrics})
    checks = [KINDS[spec.kind].check for spec in event.perturbations if KINDS[spec.kind].check]
    missing = [c for c in dict.fromkeys(checks) if c and c not in event.metrics]
    if missing:  # the perturbation asks for its check: without it, nothing would judge it
        event = event.model_copy(update={"metrics": [*event.metrics, *missing]})
    check_cases(suite, event)
    check_perturbations(suite, event)
    return event


def run_estimate(
    event: RunEvent, suite: Suite, items: Sequence[ManifestItem]
) -> RunEstimate | None:
    """The run's cost estimate, recorded so summary.json can show it beside the actual
    figures. An estimate that fails costs the comparison, never the run."""
    try:
        return estimate_run(event, suite, items)
    except Exception:
        logging.getLogger(__name__).exception("no cost estimate for this run")
        return None


def prepare_run(
    spec: EventSpec,
    store: RunStore,
    *,
    now: datetime | None = None,
    make_judge: JudgeMaker | None = None,
    settings: Settings | None = None,
    deadline: float | None = None,
) -> PrepareOutput:
    """Prepare the run ``spec`` (the event, parsed at the handler's door:
    :func:`evalrunner.event.read_event`) describes. ``make_judge``: how to build the run's
    judge (a Lambda container's :class:`~evalrunner.pipeline.context.Runtime` passes its
    own); default: from the event's judge object, with the judge cache in ``store``.
    ``settings``: the process's (its runtime's; default: read from the environment now),
    for the deployment's cap on ``max_concurrency`` and the limits on the suite.
    ``deadline``: a ``time.monotonic()`` instant the red team's attack writing must end by
    (the handler's time limit less a margin for storing the run; None: none, a local run's
    default): no judge call that could not finish before it is asked."""
    now = now or utcnow()
    settings = Settings.from_env() if settings is None else settings
    event = RunEvent.from_spec(spec, concurrency_cap=settings.max_concurrency_cap)
    notice = concurrency_notice(event)
    if notice:  # the run goes on, at the cap: said in the function's log
        logging.getLogger(__name__).warning(notice)
    # the event's judge object was checked against JudgeConfig by parse_event
    judge_config = JudgeConfig.model_validate(event.judge) if event.judge is not None else None
    built: list[Judge] = []

    def run_judge() -> Judge:
        """The run's judge, built once, when first needed (a red team, a misinformation
        perturbation)."""
        if judge_config is None:
            raise ValueError("the run has no judge")  # parse_event refuses such an event
        if not built:
            maker = make_judge or (lambda c: default_judge(c, store=store, session=None))
            built.append(maker(judge_config))
        return built[0]

    suite_key = event.key
    if event.spec.redteam is not None:  # the attacks are the suite (written once, reused)
        from evalrunner.redteam.prepare import attack_suite

        event, suite, suite_key = attack_suite(
            event, store, run_judge, settings.suite_limits, deadline
        )
    else:
        suite = read_suite(
            store.get_bytes(event.key), posixpath.basename(event.key), settings.suite_limits
        )
    event = settle(event, suite)
    run_id = event.run_id or new_run_id(now)
    name = target_name(event.target)
    judge = None
    if judge_config is not None and any(KINDS[p.kind].needs_judge for p in event.perturbations):
        judge = run_judge()
    items = expand(suite, event.iterations, event.perturbations, judge)
    config = RunConfig(
        run_id=run_id,
        bucket=store.bucket,
        suite_key=suite_key,
        suite_name=suite.name,
        target=event.target_spec,
        target_kind=event.target_kind,
        target_name=name,
        iterations=event.iterations,
        metrics=event.metrics,
        plugins=event.plugins,
        judge_metrics=event.judge_metrics,
        thresholds=event.thresholds,
        fail_under=event.fail_under,
        evaluator_options=event.evaluator_options,
        baseline=event.baseline,
        rescored_from=event.spec.rescored_from,
        policy=event.policy,
        judge=judge_config,
        started_at=now.isoformat(timespec="seconds"),
        # claimed atomically: two runs of one target in one second get two prefixes
        report_prefix=claim_report_prefix(store, name, now, run_id),
        case_count=len(suite.cases),
        item_count=len(items),
        max_text_chars=event.max_text_chars,
        perturbations=event.perturbations,
        estimate=run_estimate(event, suite, items),
    )
    # Inputs of the next steps, not outputs: written as given (a header value the event put
    # there must reach the target as it is, even after a run in this process registered it).
    manifest = [i.model_dump(mode="json") for i in items]
    store.put_json(store.manifest_key(run_id), manifest, redact=False)
    per_task = cases_per_task(event, len(items))
    refs = [b.model_dump(mode="json") for b in batches(len(items), per_task)]
    store.put_json(store.batches_key(run_id), refs, redact=False)
    store.put_json(store.run_key(run_id), config.model_dump(mode="json"), redact=False)
    return PrepareOutput(
        run_id=run_id,
        bucket=store.bucket,
        manifest_key=store.manifest_key(run_id),
        batches_key=store.batches_key(run_id),
        item_count=len(items),
        cases_per_task=per_task,
        max_concurrency=event.max_concurrency,
        tolerated_failure_percentage=event.tolerated_failure_percentage,
        target_name=name,
        # "scoring": "cpu" keeps the run off the GPU Batch job (no G-instance quota, ...)
        batch_scoring=event.scoring != "cpu"
        and any(_needs_models(resolve(n)) for n in event.metrics),
    )


def _needs_models(evaluator: type[Evaluator]) -> bool:
    """Whether the evaluator's scores need the Score step's models (so a deployment with GPU
    scoring sends large runs to the GPU job): a batched model metric, or a per-case metric
    with a model part (a judge metric's embedding similarity)."""
    return evaluator.requires is Requirement.GPU_BATCH or issubclass(evaluator, ScoreStepPart)
