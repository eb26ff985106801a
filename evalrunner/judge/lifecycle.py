"""Bedrock models that are Legacy or End-of-Life: a dated table shipped with evalrunner
(``bedrock_lifecycle.json``), read by ``cdk synth`` (a default judge on it fails the synth
unless cdk.json says ``allow_legacy_judge``) and by ``evalrunner validate`` (a warning).

Why a shipped table and not a ``GetFoundationModel`` call: synth and validate run offline and
without credentials; the table says the date it was written, and ``evalrunner doctor --aws``
is where a live account is asked.
"""

from __future__ import annotations

import re
from datetime import date
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

#: A cross-region inference profile id's geography prefix (``us.anthropic.claude-...``).
INFERENCE_PROFILE = re.compile(r"^(us|eu|apac|us-gov|ca|jp|au|global)\.")


class LegacyModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_id: str
    status: Literal["legacy", "end-of-life"]
    eol: date | None = None
    replacement: str


class LifecycleTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    as_of: date
    note: str
    sources: list[str]
    models: list[LegacyModel]


@cache
def lifecycle_table() -> LifecycleTable:
    """The shipped table (read once per process)."""
    text = resources.files("evalrunner.judge").joinpath("bedrock_lifecycle.json").read_text()
    return LifecycleTable.model_validate_json(text)


def base_model_id(model: str) -> str:
    """The foundation model id behind a model id, an inference profile id or an ARN of
    either: ``arn:...:inference-profile/us.anthropic.x-v1:0`` -> ``anthropic.x-v1:0``."""
    if model.startswith("arn:"):
        model = model.split("/", 1)[-1]
    return INFERENCE_PROFILE.sub("", model)


def legacy_model(model: str) -> LegacyModel | None:
    """The table's entry for ``model`` (any spelling :func:`base_model_id` reads), or None."""
    base = base_model_id(model)
    return next((m for m in lifecycle_table().models if m.model_id == base), None)


def legacy_message(model: str) -> str | None:
    """What is wrong with judging with ``model`` and what to use instead, or None."""
    entry = legacy_model(model)
    if entry is None:
        return None
    table = lifecycle_table()
    when = f" (end of life {entry.eol.isoformat()})" if entry.eol else ""
    return (
        f"the Bedrock judge model {model} is {entry.status} on Amazon Bedrock{when} as of "
        f"{table.as_of.isoformat()}: requests to an end-of-life model fail, so every judged "
        f"case would error. Use an Active model, e.g. {entry.replacement} (a cross-region "
        "inference profile), in judge.bedrock.model_id"
    )


def legacy_judge_warning(judge: dict[str, Any] | None) -> str | None:
    """:func:`legacy_message` for a judge config (its ``bedrock.model_id``), or None."""
    bedrock = (judge or {}).get("bedrock")
    if not isinstance(bedrock, dict) or not isinstance(bedrock.get("model_id"), str):
        return None
    return legacy_message(bedrock["model_id"])


__all__ = [
    "INFERENCE_PROFILE",
    "LegacyModel",
    "LifecycleTable",
    "base_model_id",
    "legacy_judge_warning",
    "legacy_message",
    "legacy_model",
    "lifecycle_table",
]
