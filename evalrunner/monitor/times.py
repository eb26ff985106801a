"""``--since`` and ``--lateness`` as people write them: ``90s``, ``15m``, ``2h``, ``7d``, or
(for ``--since``) an ISO 8601 time."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from evalrunner.monitor.model import MonitorError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: The longest duration taken (a century): much more overflows the dates it is taken from.
MAX_DURATION_DAYS = 36500


def duration_seconds(text: str, option: str) -> float:
    match = _DURATION.match(text)
    if not match:
        raise MonitorError(f"{option} {text!r}: give a duration such as 90s, 15m, 2h or 7d")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_DURATION_DAYS * _UNITS["d"]:
        raise MonitorError(f"{option} {text!r}: give at most {MAX_DURATION_DAYS}d (a century)")
    return seconds


def since_time(text: str, now: datetime) -> datetime:
    """A duration back from ``now`` (``24h``), or an ISO 8601 time (UTC unless it says)."""
    if _DURATION.match(text):
        return now - timedelta(seconds=duration_seconds(text, "--since"))
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MonitorError(
            f"--since {text!r}: give a duration back from now (24h, 7d) or an ISO 8601 time "
            "(2026-01-31T00:00:00Z)"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
