"""The price table the cost estimate reads: ``prices.json`` beside this module, one file with
its date, region and sources, so updating prices is one reviewed edit, not a code change.

The ``assumptions`` are the figures no price page gives (how long a case's Lambda runs, how
fast the GPU scores texts, how many S3 requests a case makes): estimates, not yet calibrated
on a deployed run, kept beside the prices so the estimate's every number has one source
(and one place to correct it).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepFunctionsPrices(_Strict):
    per_1000_transitions: float = Field(ge=0)


class LambdaPrices(_Strict):
    per_gb_second: float = Field(ge=0)
    per_million_requests: float = Field(ge=0)


class S3Prices(_Strict):
    per_1000_put: float = Field(ge=0)
    per_1000_get: float = Field(ge=0)


class BatchPrices(_Strict):
    instance_type: str
    per_instance_hour: float = Field(ge=0)


class CloudWatchPrices(_Strict):
    """What a monitor's series and alarms cost (standard resolution, first tier)."""

    per_metric_month: float = Field(ge=0)
    #: PutMetricData requests
    per_1000_requests: float = Field(ge=0)
    #: An anomaly-detection alarm is billed as three standard-resolution alarm metrics.
    per_anomaly_alarm_month: float = Field(ge=0)


class TokenPrices(_Strict):
    per_million_input: float = Field(ge=0)
    per_million_output: float = Field(ge=0)


class Assumptions(_Strict):
    """What a run of this pipeline uses per run and per case × iteration (see the module)."""

    transitions_per_run: int = Field(ge=0)
    #: A Map task (``cases_per_task`` cases): RunCase, MoreCases, CasesDone.
    transitions_per_task: int = Field(ge=0)
    lambda_memory_gb: dict[str, float]
    prepare_seconds: float = Field(ge=0)
    aggregate_seconds_base: float = Field(ge=0)
    aggregate_seconds_per_item: float = Field(ge=0)
    run_case_seconds_base: float = Field(ge=0)
    judge_seconds_per_call: float = Field(ge=0)
    score_texts_per_second_cpu: float = Field(gt=0)
    gpu_texts_per_second: float = Field(gt=0)
    gpu_job_overhead_minutes: float = Field(ge=0)
    s3_puts_per_item: int = Field(ge=0)
    s3_gets_per_item: int = Field(ge=0)
    s3_puts_per_run: int = Field(ge=0)
    s3_gets_per_run: int = Field(ge=0)


class PriceTable(_Strict):
    as_of: str
    region: str
    currency: str
    #: how the prices were taken and how to update them
    note: str = ""
    sources: list[str]
    step_functions: StepFunctionsPrices
    lambda_: LambdaPrices = Field(alias="lambda")
    s3: S3Prices
    batch: BatchPrices
    cloudwatch: CloudWatchPrices
    judge_models: dict[str, TokenPrices]
    assumptions: Assumptions

    def judge_prices(self, model: str | None) -> TokenPrices | None:
        """The token prices of a judge model: the exact id, else the longest listed id the
        model's id contains (a Bedrock inference profile ``us.anthropic.claude-...``)."""
        if not model:
            return None
        if model in self.judge_models:
            return self.judge_models[model]
        inside = [name for name in self.judge_models if name in model]
        return self.judge_models[max(inside, key=len)] if inside else None


@cache
def load_prices() -> PriceTable:
    """The shipped price table (read once per process)."""
    text = resources.files("evalrunner.estimate").joinpath("prices.json").read_text("utf-8")
    return PriceTable.model_validate_json(text)


__all__ = ["Assumptions", "PriceTable", "TokenPrices", "load_prices"]
