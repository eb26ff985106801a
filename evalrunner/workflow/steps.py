"""The workflow's steps, each a call of the library function behind its command (never a
subprocess): ``generate`` (:func:`evalrunner.generate.build.generate`), ``evaluate``
(:func:`evalrunner.evaluate`), ``robustness`` (the same run with the event's
``perturbations``), ``redteam`` (:func:`evalrunner.redteam.red_team`), ``calibrate``
(:func:`evalrunner.calibrate.calibrate`), ``weak-spots``
(:func:`evalrunner.reports.analysis.weakness.find_weak_spots`) and ``artifacts``
(:mod:`evalrunner.workflow.artifacts`). Each writes under its own folder of the workflow
folder and returns what the manifest records."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from evalrunner.errors import ConfigError
from evalrunner.reports.model import ReportData, WeakSpot
from evalrunner.workflow.config import Step, WorkflowConfig
from evalrunner.workflow.manifest import Manifest, StepRecord

if TYPE_CHECKING:
    from evalrunner.api.result import EvalRun
    from evalrunner.judge.base import Judge
    from evalrunner.redteam.api import RedTeamPlan
    from evalrunner.reports.summary import RunSummary


@dataclass
class Context:
    """What every step sees: the configuration, the folder, the target and the manifest."""

    config: WorkflowConfig
    folder: Path
    #: The target as the API takes it: the event's target object or a Python function.
    target: Any
    manifest: Manifest = field(default_factory=Manifest)
    judge: dict[str, Any] | None = None
    #: Builds the judge that writes the suite, the attacks and the artifacts from the judge
    #: object (default: with the local judge cache); the deployed workflow's caches in the
    #: bucket's ``judge-cache/``, as a deployed run's judge does.
    writer: Callable[[Mapping[str, Any]], Judge] | None = None

    def output(self, step: Step, name: str) -> Path | None:
        """A finished step's output file, or None."""
        record = self.manifest.record(step)
        rel = record.outputs.get(name) if record.status == "done" else None
        return self.folder / rel if rel else None

    def suite(self) -> Path:
        """The suite the runs use: the generated one, else the configured file."""
        generated = self.output(Step.GENERATE, "suite")
        if generated is not None:
            return generated
        if self.config.suite:
            path = Path(self.config.suite)
            if not path.is_file():
                raise ConfigError(f"suite: {path} does not exist or is not a file")
            return path
        raise ConfigError(
            "the workflow has no suite: give --documents FOLDER (the generate step writes one) "
            "or --suite FILE"
        )

    def rel(self, path: Path) -> str:
        # POSIX form on every OS: the manifest refuses backslashes (it travels to the bucket)
        return path.resolve().relative_to(self.folder.resolve()).as_posix()


StepFn = Callable[[Context], StepRecord]


def judge_client(ctx: Context) -> Any:
    """The judge that writes the suite and the artifacts (the workflow's, else the
    configured default), with the judge cache, so a rerun asks nothing again."""
    from evalrunner.redteam.api import generation_judge
    from evalrunner.run_defaults import default_judge

    raw = ctx.judge
    if not raw:
        found = default_judge()
        if found is None:
            raise ConfigError(
                "the workflow needs an LLM judge (it writes the suite, the attacks and the "
                'artifacts): give --judge \'{"openai": {"base_url": "http://localhost:8000/v1", '
                '"model": "m"}}\', or set EVALRUNNER_JUDGE'
            )
        raw = dict(found[0])
    return (ctx.writer or generation_judge)(raw)


def generate(ctx: Context) -> StepRecord:
    """Documents to a validated suite (``evalrunner generate``)."""
    from evalrunner.generate.build import generate as build_suite
    from evalrunner.generate.build import parse_counts
    from evalrunner.generate.documents import load_documents
    from evalrunner.suite.template import write_suite_xlsx

    if not ctx.config.documents:
        return StepRecord(
            step=Step.GENERATE,
            status="skipped",
            headline=f"no documents: the suite {ctx.config.suite} is evaluated as it is",
        )
    counts = parse_counts(ctx.config.counts or {})
    client = judge_client(ctx)
    documents = load_documents(ctx.config.documents)
    embed = _embedder()
    rows, report = build_suite(
        ctx.config.documents,
        client,
        counts=counts,
        embed=embed,
        max_words=ctx.config.max_words,
        documents=documents,
    )
    if not rows:
        raise ConfigError(
            "generate: no case passed validation (rejected: "
            f"{json.dumps(report.rejected_by_reason)}; failed asks: {len(report.failed_asks)})"
        )
    folder = ctx.folder / "generate"
    folder.mkdir(parents=True, exist_ok=True)
    suite = folder / "suite.xlsx"
    write_suite_xlsx(suite, rows)
    sidecar = folder / "suite.generation.json"
    sidecar.write_text(report.model_dump_json(indent=2) + "\n", "utf-8")
    return StepRecord(
        step=Step.GENERATE,
        status="done",
        verdict="passed",
        headline=(
            f"{report.kept} of {report.drafted} drafted cases kept from {report.documents} "
            f"documents in {len(report.topics)} topics"
        ),
        outputs={"suite": ctx.rel(suite), "generation": ctx.rel(sidecar)},
        facts={"kept": report.kept, "drafted": report.drafted, "topics": len(report.topics)},
    )


def _embedder() -> Any:
    from evalrunner.models import ModelRole, ModelUnavailable, default_model
    from evalrunner.models.hub import tool_encoder

    try:
        return tool_encoder(default_model(ModelRole.EMBEDDING)).embed
    except ModelUnavailable:
        return None


def _run_record(step: Step, run: EvalRun, ctx: Context) -> StepRecord:
    return run_record(step, run.summary, run.out_dir, ctx)


def run_record(step: Step, s: RunSummary, out: Path, ctx: Context) -> StepRecord:
    """A run step's record from the run's summary and the folder its reports were copied
    to (a local run's ``--out``, or the deployed workflow's copy of the run's report set)."""
    files = {
        "report": out / s.reports.html,
        "summary": out / s.reports.summary,
        "report_json": out / s.reports.report,
        "details": out / s.reports.details,
        "problems": out / s.reports.problems,
    }
    return StepRecord(
        step=step,
        status="done",
        verdict=s.verdict.outcome.value,
        headline=f"{s.verdict.headline}: {s.cases} cases"
        + (f"; {s.verdict.reasons[0]}" if s.verdict.reasons else ""),
        outputs={k: ctx.rel(v) for k, v in files.items()},
        facts={"cases": s.cases, "problems": len(s.problems)},
    )


def evaluate(ctx: Context) -> StepRecord:
    """The suite against the target (``evalrunner run``)."""
    from evalrunner.api.runs import evaluate as run_suite

    c = ctx.config
    run = run_suite(
        ctx.suite(),
        ctx.target,
        metrics=c.metrics,
        iterations=c.iterations,
        judge=ctx.judge,
        out=ctx.folder / "evaluate",
        thresholds=c.thresholds,
        fail_on=c.fail_on,
        max_concurrency=c.max_concurrency,
        preflight=c.preflight,
    )
    return _run_record(Step.EVALUATE, run, ctx)


def robustness(ctx: Context) -> StepRecord:
    """The suite again with perturbed questions (``evalrunner run --perturb``): which verdicts
    flip."""
    from evalrunner.api.inputs import target_spec
    from evalrunner.api.result import EvalRun
    from evalrunner.launch import run_local

    c = ctx.config
    if not c.perturbations:
        return StepRecord(step=Step.ROBUSTNESS, status="skipped", headline="no perturbations")
    spec, functions = target_spec(ctx.target)
    suite = ctx.suite()
    result = run_local(
        robustness_event(ctx, suite.name, spec),
        suite,
        ctx.folder / "robustness",
        functions=functions,
        preflight=c.preflight,
    )
    run = EvalRun(result)
    return robustness_record(_run_record(Step.ROBUSTNESS, run, ctx), run.summary)


def evaluate_event(ctx: Context, suite_name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The evaluate step's run as an event (the deployed workflow starts it; locally
    :func:`evaluate` makes the same event through :func:`evalrunner.evaluate`)."""
    return _run_event(ctx, suite_name, spec)


def robustness_event(ctx: Context, suite_name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The robustness step's run: the suite with the configured perturbations."""
    perturbations = [p.model_dump(exclude_none=True) for p in ctx.config.perturbations]
    return _run_event(ctx, suite_name, spec, perturbations=perturbations)


def _run_event(ctx: Context, suite_name: str, spec: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A run event with the workflow's run settings (and ``more``)."""
    from evalrunner.launch import local_event

    c = ctx.config
    return local_event(
        suite_name,
        spec,
        iterations=c.iterations,
        max_concurrency=c.max_concurrency,
        metrics=c.metrics,
        thresholds=c.thresholds,
        judge=ctx.judge,
        fail_on=c.fail_on,
        **more,
    )


def robustness_record(record: StepRecord, summary: RunSummary) -> StepRecord:
    """The robustness run's record, its verdict and headline from which verdicts flipped."""
    scores = {r.name: r.score for r in summary.robustness if r.score is not None}
    broken = {r.name: r.broken for r in summary.robustness if r.broken}
    record.verdict = "failed" if broken else "passed"
    record.headline = (
        ", ".join(f"{name}: {score:.0%} of verdicts held" for name, score in scores.items())
        or "no perturbed copy was compared"
    ) + (f"; cases broke under {', '.join(broken)}" if broken else "")
    record.facts = {**record.facts, "robustness": scores, "broken": broken}
    return record


def redteam(ctx: Context) -> StepRecord:
    """Attacks by plugin and strategy, graded by the judge (``evalrunner redteam``)."""
    from evalrunner.redteam.api import red_team

    r = ctx.config.redteam
    suite = None if r.purpose else ctx.suite()
    run = red_team(
        ctx.target,
        judge=ctx.judge,
        purpose=r.purpose,
        suite=suite,
        plugins=r.plugins,
        strategies=r.strategies,
        num_tests=r.num_tests,
        seed=r.seed,
        language=r.language,
        out=ctx.folder / "redteam",
        min_resisted=r.min_resisted,
        fail_on=ctx.config.fail_on,
        max_concurrency=ctx.config.max_concurrency,
        preflight=ctx.config.preflight,
    )
    return redteam_record(_run_record(Step.REDTEAM, run, ctx), run.summary)


def redteam_plan(ctx: Context, spec: dict[str, Any]) -> RedTeamPlan:
    """The red-team step's attacks, written by the judge (the deployed workflow writes them
    in its Lambda and starts a run of them, as :func:`redteam` runs them here)."""
    from evalrunner.redteam.api import plan

    r = ctx.config.redteam
    return plan(
        spec,
        judge=ctx.judge,
        purpose=r.purpose,
        suite=None if r.purpose else ctx.suite(),
        plugins=r.plugins,
        strategies=r.strategies,
        num_tests=r.num_tests,
        seed=r.seed,
        language=r.language,
        writer=ctx.writer,
    )


def redteam_record(record: StepRecord, summary: RunSummary) -> StepRecord:
    """The red-team run's record, its headline counting the plugins that got through."""
    findings = [p for p in summary.problems if p.type == "redteam"]
    record.facts = {**record.facts, "findings": len(findings)}
    if findings:
        record.headline = f"{record.headline}; {len(findings)} plugin(s) with successful attacks"
    return record


def calibrate(ctx: Context) -> StepRecord:
    """The evaluate run's verdicts against human labels (``evalrunner calibrate``); skipped
    without labels."""
    from evalrunner.calibrate import calibrate as run_calibration
    from evalrunner.calibrate import read_labelled_run
    from evalrunner.reports.views.html import render_calibration

    if not ctx.config.labels:
        return StepRecord(
            step=Step.CALIBRATE, status="skipped", headline="no labels (give --labels FILE)"
        )
    labels = Path(ctx.config.labels)
    if not labels.is_file():
        raise ConfigError(f"labels: {labels} does not exist or is not a file")
    details = needed(ctx, Step.EVALUATE, "details")
    result = run_calibration(
        read_labelled_run(details, labels), source=str(details), labels_source=str(labels)
    )
    folder = ctx.folder / "calibrate"
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "calibration": folder / "calibration.json",
        "thresholds": folder / "thresholds.json",
        "report": folder / "calibration.html",
    }
    files["calibration"].write_text(result.model_dump_json(indent=2) + "\n", "utf-8")
    files["thresholds"].write_text(json.dumps(result.thresholds(), indent=2) + "\n", "utf-8")
    files["report"].write_text(render_calibration(result), "utf-8")
    suggested = result.thresholds()
    return StepRecord(
        step=Step.CALIBRATE,
        status="done",
        verdict="passed",
        headline=(
            f"{len(result.metrics)} metric(s) compared with the human verdicts; suggested "
            f"thresholds: {json.dumps(suggested) if suggested else 'none'}"
        ),
        outputs={k: ctx.rel(v) for k, v in files.items()},
        facts={"suggested": suggested},
    )


def needed(ctx: Context, step: Step, name: str) -> Path:
    path = ctx.output(step, name)
    if path is None or not path.exists():
        raise ConfigError(
            f"this step reads the {step.value} step's {name}, which is not there: run "
            f"--steps {step.value} first"
        )
    return path


class FailingCase(BaseModel):
    """A case with a failed primary check in the evaluate run."""

    case_id: str
    question: str
    expected_answer: str | None = None
    answer: str | None = None
    categories: list[str] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)


class WeakSpotsOutput(BaseModel):
    """``weak-spots/weak-spots.json``: the evaluate run's failing cases, grouped."""

    method: str | None
    spots: list[WeakSpot]
    failing: list[FailingCase]


def failing_cases(data: ReportData) -> list[FailingCase]:
    """The run's cases with a failed primary result (any iteration), in suite order."""
    primary = {m.metric for m in data.metrics if m.primary}
    found: dict[str, FailingCase] = {}
    for row in data.rows:
        failed = [r for r in row.results if r.metric in primary and r.success is False]
        if not failed:
            continue
        case = found.setdefault(
            row.case_id,
            FailingCase(
                case_id=row.case_id,
                question=row.question,
                expected_answer=row.expected_answer,
                answer=row.answer,
                categories=row.categories,
                documents=row.documents,
            ),
        )
        for r in failed:
            line = f"{r.metric}: {r.reason}"[:300]
            if line not in case.reasons:
                case.reasons.append(line)
    return list(found.values())


def weak_spots(ctx: Context) -> StepRecord:
    """The evaluate run's failing cases grouped by the weak-spots code (TF-IDF of the
    questions, so the groups do not depend on which model the run loaded)."""
    from evalrunner.reports.analysis.weakness import find_weak_spots

    data = ReportData.model_validate_json(needed(ctx, Step.EVALUATE, "report_json").read_bytes())
    spots, method = find_weak_spots(data, None, "TF-IDF of the questions")
    result = WeakSpotsOutput(method=method, spots=spots, failing=failing_cases(data))
    folder = ctx.folder / "weak-spots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "weak-spots.json"
    path.write_text(result.model_dump_json(indent=2) + "\n", "utf-8")
    weak = [s for s in spots if s.weak]
    return StepRecord(
        step=Step.WEAK_SPOTS,
        status="done",
        verdict="failed" if weak else "passed",
        headline=(
            f"{len(result.failing)} failing case(s) in {len(spots)} group(s), "
            f"{len(weak)} weak spot(s)"
            + (f": {', '.join(s.name for s in weak[:3])}" if weak else "")
        ),
        outputs={"weak_spots": ctx.rel(path)},
        facts={"failing": len(result.failing), "groups": len(spots), "weak": len(weak)},
    )
