"""Where evalrunner keeps what a local run may reuse in the next one, per user."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/evalrunner/<parts>`` (``~/.cache`` without it): the judge's replies
    and the parsed state machine live here; the embedded bucket disappears with each run."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "evalrunner", *parts)
