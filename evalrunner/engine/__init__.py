"""The embedded default: the deployed state machine, run on this machine.

``LocalEngine`` (from :mod:`.local`), ``Progress`` and ``RunResult`` (from
:mod:`.run_types`) are imported when first asked for, not when the package is: a light module
of the package (``saved_runs``, which the CLI reads before a run to name its stopped runs)
must not import moto's Step Functions interpreter, which the CLI imports while the pre-flight
probe waits on the target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.engine.local import LocalEngine
    from evalrunner.engine.run_types import Progress, RunResult

__all__ = ["LocalEngine", "Progress", "RunResult"]


def __getattr__(name: str) -> Any:
    if name == "LocalEngine":
        from evalrunner.engine.local import LocalEngine

        return LocalEngine
    if name in __all__:
        from evalrunner.engine import run_types

        return getattr(run_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
