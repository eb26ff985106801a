"""The workflow report: ``workflow.json`` is the manifest (for resuming); the report,
``workflow-report.json`` and ``workflow-report.html``, says each step's verdict in one line
and links each step's own reports and the artifacts, relative to the workflow folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from evalrunner.workflow.config import Step
from evalrunner.workflow.manifest import Manifest, verdict

REPORT_JSON = "workflow-report.json"
REPORT_HTML = "workflow-report.html"
#: Outputs linked from the report, by step: the pages and files a reader opens.
LINKED = ("report", "summary", "problems", "suite", "generation", "weak_spots", "thresholds")
ARTIFACT_NAMES = {
    "corpus_patch": "Corpus patch (Markdown)",
    "corpus_patch_json": "Corpus patch (JSON)",
    "system_prompt": "System-prompt extension",
    "system_prompt_json": "System-prompt rules with their reasons (JSON)",
    "guardrail": "Bedrock guardrail (aws bedrock create-guardrail --cli-input-json)",
}


class StepView(BaseModel):
    step: str
    status: str
    verdict: str | None = None
    headline: str | None = None
    error: str | None = None
    links: dict[str, str] = Field(default_factory=dict)
    #: Done, but a step it reads has run again since: its output is out of date.
    stale: bool = False


class WorkflowReport(BaseModel):
    """``workflow-report.json``."""

    verdict: str
    suite_from: str
    steps: list[StepView]
    artifacts: dict[str, str] = Field(default_factory=dict)
    denied_topics: list[str] = Field(default_factory=list)


def build_report(manifest: Manifest, suite_from: str, stale: Sequence[Step] = ()) -> WorkflowReport:
    steps = [
        StepView(
            step=r.step.value,
            status=r.status,
            verdict=r.verdict,
            headline=r.headline,
            error=r.error,
            links={k: v for k, v in r.outputs.items() if k in LINKED},
            stale=r.step in stale,
        )
        for r in manifest.steps
    ]
    art = manifest.record(Step.ARTIFACTS)
    artifacts = (
        {label: art.outputs[key] for key, label in ARTIFACT_NAMES.items() if key in art.outputs}
        if art.status == "done"
        else {}
    )
    denied = art.facts.get("denied_topics", []) if art.status == "done" else []
    return WorkflowReport(
        verdict=verdict(manifest),
        suite_from=suite_from,
        steps=steps,
        artifacts=artifacts,
        denied_topics=[str(t) for t in denied],
    )


def write_report(
    folder: Path, manifest: Manifest, suite_from: str, stale: Sequence[Step] = ()
) -> tuple[Path, Path]:
    """Write the report's HTML and JSON into ``folder``; ``stale``: finished steps whose
    inputs changed since they ran."""
    from evalrunner.reports.views.html import render_workflow

    report = build_report(manifest, suite_from, stale)
    folder.mkdir(parents=True, exist_ok=True)
    js = folder / REPORT_JSON
    js.write_text(report.model_dump_json(indent=2) + "\n", "utf-8")
    html = folder / REPORT_HTML
    html.write_text(
        render_workflow({"title": f"evalrunner workflow: {report.verdict}", "report": report}),
        "utf-8",
    )
    return html, js
