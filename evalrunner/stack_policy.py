"""Policies the deployed stack writes into each function's environment as JSON (which
secrets an event may name, where the runner may send requests), read back the same way.

Absent, a policy is the permissive local one; present, it is validated strictly and marked as
set by the stack, and a broken one is a ConfigError that says to redeploy: it can only be
broken by hand, since the stack writes it from ``cdk.json``.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalrunner.errors import ConfigError

P = TypeVar("P", bound=BaseModel)


def stack_policy(
    model: type[P],
    env_name: str,
    raw: str | None,
    *,
    set_by_stack: str,
    source: str,
    local: dict[str, Any] | None = None,
) -> P:
    """``raw`` (the value of ``env_name``) as ``model`` with ``set_by_stack`` true; without a
    value, ``model`` built from ``local`` (the laptop's settings). ``source`` names where
    in cdk.json the stack took it from, for the error message."""
    if not raw:
        return model.model_validate(local or {})
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise TypeError(f"a JSON object is expected, not {type(data).__name__}")
        return model.model_validate({**data, set_by_stack: True})
    except (ValueError, TypeError, ValidationError) as exc:
        raise ConfigError(
            f"{env_name} is not valid ({exc}); it is written by the stack from {source}, "
            "redeploy to fix it"
        ) from None
