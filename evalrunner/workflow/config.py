"""The workflow's configuration: one pydantic model, read from flags, a JSON file or an
event object, whose parts are the project's own models (the target's spec models, the
judge's :class:`~evalrunner.judge.config.JudgeConfig`, the perturbation spec), so a field is
checked the same way here as in ``evalrunner run``."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from evalrunner.errors import ConfigError, EvalRunnerError
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.redteam.model import MAX_TESTS
from evalrunner.redteam.spec import RedTeamSpec
from evalrunner.targets.spec import integral


class Step(StrEnum):
    """The workflow's steps, in the order they run."""

    GENERATE = "generate"
    EVALUATE = "evaluate"
    ROBUSTNESS = "robustness"
    REDTEAM = "redteam"
    CALIBRATE = "calibrate"
    WEAK_SPOTS = "weak-spots"
    ARTIFACTS = "artifacts"


STEPS: tuple[Step, ...] = tuple(Step)
#: What each step reads from the steps before it (a step selected alone needs these done).
NEEDS: dict[Step, tuple[Step, ...]] = {
    Step.GENERATE: (),
    Step.EVALUATE: (),
    Step.ROBUSTNESS: (),
    Step.REDTEAM: (),
    Step.CALIBRATE: (Step.EVALUATE,),
    Step.WEAK_SPOTS: (Step.EVALUATE,),
    Step.ARTIFACTS: (Step.WEAK_SPOTS,),
}
#: The perturbations the robustness step applies when none are configured.
DEFAULT_PERTURBATIONS = ({"kind": "typos", "intensity": 0.1}, {"kind": "synonym"})


class RedTeamSettings(RedTeamSpec):
    """The red-team step: ``evalrunner redteam``'s options (:class:`RedTeamSpec`, the one
    definition the run event's ``redteam`` shares), two attacks per plugin by default, no
    strategy, and the share of attacks that must be resisted."""

    strategies: list[str] = Field(default_factory=list)
    num_tests: Annotated[int, Field(ge=1, le=MAX_TESTS), integral] = 2
    min_resisted: float = Field(default=1.0, ge=0, le=1)


class WorkflowConfig(BaseModel):
    """One workflow: documents (or a suite), a target, a judge, and what each step uses."""

    model_config = ConfigDict(extra="forbid")

    target: dict[str, Any] = Field(description="The event's target object.")
    judge: dict[str, Any] | None = Field(
        default=None,
        description="The LLM judge, as the event's judge object (default: the configured one).",
    )
    documents: str | None = Field(
        default=None,
        description="A folder of documents (or s3://bucket/prefix/) the generate step writes "
        "the suite from.",
    )
    suite: str | None = Field(
        default=None, description="A suite file to evaluate when there are no documents."
    )
    counts: dict[str, int] | None = Field(
        default=None, description="Generated cases per kind, as generate --count."
    )
    max_words: int = Field(default=160, ge=40, le=2000)
    metrics: list[str] | None = Field(
        default=None, description="Metrics by display name, as the event's metrics."
    )
    thresholds: dict[str, float] | None = None
    iterations: int = Field(default=1, ge=1, le=100)
    fail_on: Literal["failures", "regressions", "errors", "never"] | None = None
    perturbations: list[PerturbationSpec] = Field(
        default_factory=lambda: [PerturbationSpec.model_validate(p) for p in DEFAULT_PERTURBATIONS]
    )
    redteam: RedTeamSettings = Field(default_factory=RedTeamSettings)
    labels: str | None = Field(
        default=None,
        description="Human verdicts (csv/xlsx with case_id and human_verdict) for the "
        "calibrate step; without them it is skipped.",
    )
    guardrail_name: str = Field(
        default="evalrunner-workflow",
        pattern=r"^[0-9a-zA-Z_-]{1,50}$",
        description="The guardrail's name (letters, digits, - and _; at most 50).",
    )
    max_concurrency: int = Field(default=10, ge=1, le=1000)
    preflight: bool = True

    @field_validator("target")
    @classmethod
    def _target(cls, value: dict[str, Any]) -> dict[str, Any]:
        """The event's own check of its target (one kind, its fields), worded as the
        event's errors are."""
        from evalrunner.errors import EventError
        from evalrunner.event import parse_event

        try:
            parse_event({"key": "test-suites/workflow.json", "iterations": 1, "target": value})
        except EventError as exc:
            lines = [ln.strip(" -") for ln in exc.message.splitlines()[1:] if ln.strip()]
            detail = "; ".join(lines) or exc.message
            raise PydanticCustomError("event_target", "{detail}", {"detail": detail}) from None
        return value

    @field_validator("judge")
    @classmethod
    def _judge(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        from evalrunner import network, secrets
        from evalrunner.judge.config import JudgeConfig

        if value is not None:
            JudgeConfig.model_validate(value)
            # the run event's own rules for its judge: a variable or secret the policy
            # refuses (AWS_* credentials as the judge's key) or a URL the deployed network
            # policy refuses is named here, before any step, not when the judge is first built
            problems = secrets.event_problems({"judge": value}) + network.event_problems(
                {"judge": value}
            )
            if problems:
                raise PydanticCustomError(
                    "event_judge", "{detail}", {"detail": "; ".join(problems)}
                )
        return value

    def suite_source(self) -> str:
        """Where the suite comes from, for messages."""
        return self.documents or self.suite or "nothing"


def parse_config(raw: Any, where: str = "workflow") -> WorkflowConfig:
    """``raw`` (a dict) as a :class:`WorkflowConfig`; a bad field is a :class:`ConfigError`
    naming it."""
    try:
        return WorkflowConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(_problem(e["loc"], e["msg"]) for e in exc.errors())
        raise ConfigError(f"{where}: {problems}") from None


def _problem(loc: tuple[int | str, ...], msg: str) -> str:
    where = ".".join(map(str, loc)) or "(top)"
    # the target's messages are the event's, which name the field already
    return msg if msg.startswith(where) else f"{where}: {msg}"


def load_config(
    path: Path, *, option: str = "--config", error: type[EvalRunnerError] = ConfigError
) -> dict[str, Any]:
    r"""A workflow file (JSON) as a dict, for :func:`parse_config` (and the workflow event's
    file, whose mistakes are ``EventError``\s naming ``--event``)."""
    if not path.is_file():
        raise error(f"{option}: {path} does not exist or is not a file")
    try:
        data = json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"{option}: {path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise error(f"{option}: {path} holds a {type(data).__name__}, not an object")
    return data


def parse_steps(value: str | list[str] | None) -> list[Step]:
    """``--steps generate,evaluate`` as steps in run order; None: every step."""
    if value is None:
        return list(STEPS)
    names = value.split(",") if isinstance(value, str) else list(value)
    chosen: list[Step] = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        try:
            chosen.append(Step(name))
        except ValueError:
            valid = ", ".join(s.value for s in STEPS)
            raise ConfigError(f"--steps: {name!r} is not a step; the steps are {valid}") from None
    if not chosen:
        raise ConfigError("--steps: name at least one step")
    return [s for s in STEPS if s in chosen]
