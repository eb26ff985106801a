"""What an estimate says, and the actual figures a finished run records beside it
(``summary.json``: ``estimate`` and ``actual``)."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)


class JudgeEstimate(BaseModel):
    """Judge calls and tokens of the whole run (no cache hits from earlier runs)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    #: cases whose prompts were built and counted
    sampled_cases: int
    calls: int
    input_tokens: int
    output_tokens: int
    #: None when the price table has no prices for the judge's model
    cost: float | None = None


class AwsCost(BaseModel):
    """A deployed run's AWS usage and cost, per service (``prices.json`` prices)."""

    model_config = ConfigDict(extra="forbid")

    state_transitions: int
    map_child_executions: int
    lambda_requests: int
    lambda_gb_seconds: float
    gpu_minutes: float
    s3_puts: int
    s3_gets: int
    step_functions: float
    lambda_functions: float
    batch: float
    s3: float
    total: float


class RedTeamEstimate(BaseModel):
    """The judge calls a run event's ``redteam`` makes in Prepare to write its attacks (the
    run's own judge calls, which grade them, are in ``judge``)."""

    model_config = ConfigDict(extra="forbid")

    #: attack cases at most (num_tests per plugin, plus a copy per strategy that applies)
    attacks: int
    calls: int
    input_tokens: int
    output_tokens: int
    #: None when the price table has no prices for the judge's model
    cost: float | None = None


class RunEstimate(BaseModel):
    """A run's size and cost, computed before it runs (``evalrunner estimate``, and Prepare
    for every run, so summary.json can show it beside the actual figures)."""

    model_config = ConfigDict(extra="forbid")

    cases: int
    iterations: int
    #: perturbations of the run (each adds a perturbed copy of the cases it changes)
    perturbations: int
    #: case × iteration runs (the Map's child executions), perturbed copies included
    items: int
    metrics: list[str]
    judge: JudgeEstimate | None = None
    #: texts the model metrics score in the Score step
    scored_texts: int = 0
    gpu_minutes: float = 0.0
    aws: AwsCost
    prices_as_of: str
    region: str
    currency: str
    #: what the estimate assumed (stand-in answers, cold cache, ...)
    notes: list[str] = Field(default_factory=list)
    #: a red-team event's attack writing (absent from every other estimate's JSON)
    redteam: RedTeamEstimate | None = None

    @model_serializer(mode="wrap")
    def _redteam_when_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.redteam is None and isinstance(data, dict):
            data.pop("redteam", None)
        return data


class ActualFigures(BaseModel):
    """What the run measured, in the estimate's terms."""

    model_config = ConfigDict(extra="forbid")

    items: int
    judge_calls: int
    judge_cached: int
    judge_input_tokens: int
    judge_output_tokens: int
    judge_cost: float | None = None


__all__ = ["ActualFigures", "AwsCost", "JudgeEstimate", "RunEstimate"]
