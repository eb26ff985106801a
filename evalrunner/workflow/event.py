"""The workflow's event: one JSON object that starts a whole workflow, deployed (the input of
the workflow state machine, ``state_machines/workflow.asl.json``) or locally (``evalrunner
workflow --event FILE``).

It is :class:`~evalrunner.workflow.config.WorkflowConfig` (the same fields, checked the same
way, the target by the run event's own rules) plus the workflow's id, under which its state
lives (``workflows/<id>/workflow.json`` in the bucket; a second start with the same id
resumes at the first unfinished step), and with ``documents``, ``suite`` and ``labels`` given
as keys in the runner bucket (locally: paths relative to the event file's folder).

Each deployed step is one Lambda invocation (at most 15 minutes), so what a step's judge
writes is bounded here, before anything starts: the documents the generate step reads (see
:data:`MAX_DOCUMENTS`, :data:`MAX_DOCUMENT_BYTES`, checked when the prefix is listed) and the
attacks the red-team step writes (:data:`MAX_ATTACKS`). The artifacts step makes at most
``MAX_TOPICS + 1`` judge calls by construction. Every judge reply is cached in the bucket,
so a step retried after a timeout asks only what it had not asked.

``python -m evalrunner.workflow.event`` rewrites the shipped JSON Schema.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from evalrunner.errors import ConfigError, EventError
from evalrunner.event_rules import SUITE_EXTENSIONS
from evalrunner.workflow.config import WorkflowConfig, load_config

SHIPPED = Path(__file__).parent.parent / "schemas" / "workflow-event.schema.json"
#: Where a deployed workflow keeps its state and outputs in the runner bucket.
WORKFLOWS_PREFIX = "workflows/"
#: Where a deployed workflow's inputs (documents, suite, labels) are put in the bucket: the
#: one prefix its role reads besides its own state (least privilege), and not the suite
#: prefix, whose uploads start runs.
INPUTS_PREFIX = "workflow-inputs/"
WORKFLOW_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
#: The generate step's documents, deployed: what one 15-minute Lambda can read and have the
#: judge draft from (the local command reads up to the generator's own limit).
MAX_DOCUMENTS = 50
MAX_DOCUMENT_BYTES = 5 * 1024 * 1024
#: Attacks the red-team step's judge writes in one Lambda (plugins x num_tests x
#: (1 + strategies)).
MAX_ATTACKS = 200
#: The workflow function's ephemeral storage (its ``/tmp``, where the scratch folder is), MiB
#: (``infra/parts/workflow.py``). A workflow holds its inputs (documents at most
#: MAX_DOCUMENT_BYTES), the manifest, the report, the artifacts and three runs' report sets;
#: the report sets are what grows (with the cases, their answers, contexts and traces), and
#: Lambda's default 512 MiB is what a few big runs fill. 4 GiB holds the copy limit below
#: twice over; storage above 512 MiB is billed per GB-second of the task, next to nothing
#: beside the function's 2 GiB of memory. Raising it (up to Lambda's 10 GiB) raises both.
SCRATCH_MIB = 4096
#: The most one task copies into its scratch folder (the workflow's prefix and its inputs),
#: checked from the listed sizes before anything is copied: half the storage, the other half
#: being what the task writes beside it (a run's report set, the report, the artifacts).
MAX_SCRATCH_BYTES = SCRATCH_MIB * 2**20 // 2


class WorkflowEvent(WorkflowConfig):
    """Starts (or resumes) one workflow: generate → evaluate → robustness → red team →
    calibrate → weak spots → artifacts, its state under ``workflows/<workflow_id>/``."""

    workflow_id: str = Field(
        pattern=WORKFLOW_ID_PATTERN,
        description="The workflow's name: its state and outputs live under "
        "workflows/<workflow_id>/ in the bucket; a second start with the same id resumes "
        "at the first unfinished step and reuses the finished ones. Letters, digits, - and "
        "_, at most 64.",
    )
    documents: str | None = Field(
        default=None,
        description="Key prefix of the documents in the runner bucket (e.g. 'docs/hr/'); the "
        "generate step writes the suite from them. Locally: a folder relative to the event "
        "file's folder.",
    )
    suite: str | None = Field(
        default=None,
        description="Key of a suite (.xlsx, .csv, .json) in the runner bucket, evaluated "
        "when there are no documents. Locally: a file relative to the event file's folder.",
    )
    labels: str | None = Field(
        default=None,
        description="Key of the human verdicts (csv/xlsx with case_id and human_verdict) for "
        "the calibrate step; without them it is skipped.",
    )
    wait_seconds: int = Field(
        default=30,
        ge=0,
        le=3600,
        description="Deployed: seconds between two looks at a run step's run at first; a "
        "long run is looked at less often (a tenth of its time so far, at most every 10 "
        "minutes), so the execution's history holds runs of days.",
    )

    @field_validator("documents", "suite", "labels")
    @classmethod
    def _key(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        key = value.rstrip("/") if info.field_name == "documents" else value
        if not key or key.startswith("/") or "\\" in key or "://" in key:
            raise ValueError(f"{value!r} must be a relative key in the runner bucket")
        if ".." in key.split("/") or posixpath.normpath(key) != key:
            raise ValueError(f"{value!r} must not contain '..', '.' or empty path segments")
        if not key.startswith(INPUTS_PREFIX) or key == INPUTS_PREFIX.rstrip("/"):
            example = "docs/" if info.field_name == "documents" else "suite.xlsx"
            raise ValueError(
                f"{value!r} must be under {INPUTS_PREFIX} (upload the workflow's inputs "
                f"there), e.g. '{INPUTS_PREFIX}hr/{example}'"
            )
        if info.field_name == "suite" and not key.lower().endswith(SUITE_EXTENSIONS):
            raise ValueError(f"{value!r} must end with one of {', '.join(SUITE_EXTENSIONS)}")
        return key + "/" if info.field_name == "documents" else key

    @model_validator(mode="after")
    def _bounded(self) -> WorkflowEvent:
        if not self.documents and not self.suite:
            raise ValueError(
                "give documents (a key prefix the generate step writes the suite from) or "
                "suite (the key of a suite to evaluate)"
            )
        attacks = self.attack_count()
        if attacks > MAX_ATTACKS:
            raise ValueError(
                f"redteam: {attacks} attacks to write (plugins x num_tests x (1 + "
                f"strategies)), more than one step writes ({MAX_ATTACKS}); lower "
                "redteam.num_tests or name fewer redteam.plugins"
            )
        return self

    def attack_count(self) -> int:
        """How many attacks the red-team step's judge writes."""
        from evalrunner.redteam.plan import choose_plugins, target_traits

        try:
            plugins = choose_plugins(self.redteam.plugins, target_traits(self.target))
        except ConfigError as exc:
            raise ValueError(f"redteam.plugins: {exc.message}") from None
        return len(plugins) * self.redteam.num_tests * (1 + len(self.redteam.strategies))

    @staticmethod
    def folder_prefix(workflow_id: str) -> str:
        """Where the workflow's state lives in the bucket."""
        return f"{WORKFLOWS_PREFIX}{workflow_id}/"


def parse_workflow_event(raw: Any) -> WorkflowEvent:
    """``raw`` (the decoded event) as a :class:`WorkflowEvent`; a bad field is an
    :class:`EventError` naming it and the fix."""
    from evalrunner.workflow.config import _problem

    if not isinstance(raw, dict):
        raise EventError(f"workflow event: a JSON object, not a {type(raw).__name__}")
    try:
        return WorkflowEvent.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            _problem(e["loc"], e["msg"].removeprefix("Value error, "))
            if e["loc"]
            else e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise EventError(f"workflow event: {problems}") from None


def load_workflow_event(path: Path) -> dict[str, Any]:
    """A workflow event file (JSON) as a dict."""
    return load_config(path, option="--event", error=EventError)


def local_config(event: WorkflowEvent, root: Path) -> WorkflowConfig:
    """The event as the local runner takes it: its keys as paths under ``root`` (the event
    file's folder, standing for the bucket)."""
    fields = event.model_dump(exclude={"workflow_id", "wait_seconds"})
    for name in ("documents", "suite", "labels"):
        if fields.get(name):
            fields[name] = str(root / fields[name])
    return WorkflowConfig.model_validate(fields)


def schema() -> dict[str, Any]:
    """The event's JSON Schema (the model's)."""
    generated = WorkflowEvent.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "evalrunner workflow event",
        **generated,
    }


def render() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m evalrunner.workflow.event: rewrite the shipped file
    SHIPPED.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {SHIPPED}\n")


def run_suite_prefix(workflow_id: str) -> str:
    from evalrunner.event_rules import WORKFLOW_SUITE_PREFIX

    return f"{WORKFLOW_SUITE_PREFIX}{workflow_id}/"


ENV_SCRATCH = "EVALRUNNER_WORKFLOW_SCRATCH"


def scratch(workflow_id: str) -> Path:
    """The task's copy of the workflow's prefix: a fixed path per workflow, so the settings
    digest (which names the inputs' paths) is the same in every task. Its root is the temporary
    folder (a Lambda's own ``/tmp``) unless ENV_SCRATCH names one (tests on one machine do)."""
    root = os.environ.get(ENV_SCRATCH) or Path(tempfile.gettempdir(), "evalrunner-workflow")
    return Path(root) / workflow_id
