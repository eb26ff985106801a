"""The embedded default: the deployed state machine, run on this machine.

``LocalEngine``, ``Progress`` and ``RunResult`` are imported from :mod:`.local` when first
asked for, not when the package is: a light module of the package (``saved_runs``, which the
CLI reads before a run to name its stopped runs) must not import moto's Step Functions
interpreter (~1 s), which the CLI now imports while the pre-flight probe waits on the target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.engine.local import LocalEngine, Progress, RunResult

__all__ = ["LocalEngine", "Progress", "RunResult"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from evalrunner.engine import local

        return getattr(local, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
