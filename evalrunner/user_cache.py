"""Where evalrunner keeps what a local run may reuse in the next one, per user."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def user_cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/evalrunner/<parts>`` (``~/.cache`` without it): the judge's replies
    live here; the embedded bucket disappears with each run."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "evalrunner", *parts)


def is_private(path: Path | str) -> bool:
    """``path`` exists, belongs to this user and nobody else may write to it. What is cached
    as code (compiled templates) runs when it is read, so it is read
    only from such a place, as Jinja checks its own cache folder. (On Windows a user's
    folders are private by their ACLs: ownership is not checked there.)"""
    try:
        info = os.stat(path)
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
