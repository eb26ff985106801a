"""What the local engine is handed and what it hands back: the four pipeline functions the
state machine calls (and the builder of their handlers), a run's progress and its result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalrunner.engine.dispatch import Handler
from evalrunner.pipeline.context import Runtime
from evalrunner.reports.summary import RunSummary

#: Functions the state machine calls, by the placeholder that names them.
PIPELINE_FUNCTIONS = {
    "PrepareFunctionArn": "evalrunner-prepare",
    "RunCaseFunctionArn": "evalrunner-run-case",
    "ScoreFunctionArn": "evalrunner-score",
    "AggregateFunctionArn": "evalrunner-aggregate",
}


@dataclass(frozen=True)
class PipelineHandlers:
    """The four functions the state machine calls."""

    prepare: Handler
    run_case: Handler
    score: Handler
    aggregate: Handler

    def by_name(self) -> dict[str, Handler]:
        return {
            PIPELINE_FUNCTIONS["PrepareFunctionArn"]: self.prepare,
            PIPELINE_FUNCTIONS["RunCaseFunctionArn"]: self.run_case,
            PIPELINE_FUNCTIONS["ScoreFunctionArn"]: self.score,
            PIPELINE_FUNCTIONS["AggregateFunctionArn"]: self.aggregate,
        }


class Pipeline(Protocol):
    """Builds the pipeline's handlers over a run's :class:`Runtime`; the engine calls it once
    per run, with the session that reaches real AWS from inside the mock."""

    def __call__(self, runtime: Runtime, *, log_level: str) -> PipelineHandlers: ...


@dataclass
class Progress:
    total: int = 0
    done: int = 0
    errors: int = 0
    phase: str = "starting"


@dataclass
class RunResult:
    #: the whole run summary (summary.json's content, even when the output was cut)
    summary: RunSummary
    execution_arn: str
    definition: str
    out_dir: Path
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    #: the execution's output as Step Functions returned it (what ``--json`` prints)
    output: dict[str, Any] = field(default_factory=dict)
    #: things the user should know that did not stop the run (a history page not written)
    notices: list[str] = field(default_factory=list)
