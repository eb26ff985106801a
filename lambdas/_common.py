"""What every handler shares: the Powertools logger and the run store for the event's bucket."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger

from evalrunner.storage import RunStore

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "evalrunner"))

_stores: dict[str, RunStore] = {}


def store_for(event: dict[str, Any] | None = None) -> RunStore:
    """The event's bucket, else the function's configured one (EVALRUNNER_BUCKET)."""
    bucket = (event or {}).get("bucket") or os.environ["EVALRUNNER_BUCKET"]
    if bucket not in _stores:
        _stores[bucket] = RunStore(bucket)
    return _stores[bucket]
