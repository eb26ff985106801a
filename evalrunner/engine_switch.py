"""The switch of the embedded engine's speed seams (``EVALRUNNER_ENGINE_FAST``), read without
importing moto.

The seams themselves are :mod:`evalrunner.engine.moto_compat`, which re-exports these names.
The switch lives apart because the CLI refuses a bad value as bad input before the pre-flight
probe is sent, and that probe now starts before the engine, whose imports (moto's Step
Functions interpreter and the pipeline's handlers, ~0.4–0.8 s of CPU) run while the target
answers it (issue 31 goal 3); any module under ``evalrunner.engine`` would import the engine
first.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version

from evalrunner.errors import ConfigError

#: The moto the speed seams are written for (``tests/unit/engine/test_moto_compat.py``).
MOTO_VERSION = "5.2.5"

#: The oldest moto the engine is tested with, seams off (pyproject's ``local`` extra allows
#: ``MOTO_OLDEST`` to ``MOTO_VERSION``; bench/RESULTS.md "The moto speed seams' switch").
MOTO_OLDEST = "5.2.0"

#: The switch for every speed seam of :mod:`evalrunner.engine.moto_compat` (a documented
#: setting, README "The embedded engine's speed seams"): ``0`` runs the engine through moto's
#: ordinary botocore path.
FAST_ENV = "EVALRUNNER_ENGINE_FAST"
_ON, _OFF = frozenset({"1", "true", "on", "yes"}), frozenset({"0", "false", "off", "no"})


def speed_seams_from_env() -> bool:
    """Whether the engine's speed seams are on: ``EVALRUNNER_ENGINE_FAST``; unset, on where
    the installed moto is the one they are written for (``MOTO_VERSION``), else off.

    On: the caches of :func:`evalrunner.engine.moto_compat.interpreter_speedups`, the bounded
    retention, and the direct paths to moto's backends (the in-process S3, Lambda and Step
    Functions clients, with ``CompactKey`` objects). Off: only the Map-worker fix (a
    correctness fix) and the Lambda backend seam (how the mock reaches the handlers) are
    patched, and every S3, Lambda and Step Functions call goes through boto3, botocore and
    moto's HTTP layer, as the deployed pipeline's calls go through botocore to AWS: slower,
    and the check that the seams change nothing a run produces."""
    raw = os.environ.get(FAST_ENV, "").strip().lower()
    if not raw:
        return installed_moto_version() == MOTO_VERSION
    if raw in _ON:
        check_speed_seams_fit()
        return True
    if raw in _OFF:
        return False
    raise ConfigError(
        f"{FAST_ENV}={raw!r} is not a switch: set it to 1 (the default: the embedded "
        "engine's speed seams on) or 0 (every call through moto's ordinary botocore path)"
    )


def check_speed_seams_fit() -> None:
    """The speed seams asked for: refused, with what to do, on a moto they were not written
    for (they reach into its private code; another release may have moved any of it)."""
    installed = installed_moto_version()
    if installed != MOTO_VERSION:
        raise ConfigError(
            f"the embedded engine's speed seams are written for moto {MOTO_VERSION}, and moto "
            f"{installed} is installed: install moto=={MOTO_VERSION} for them, or leave "
            f"{FAST_ENV} unset (or 0) to run through moto's ordinary botocore path"
        )


def installed_moto_version() -> str:
    """The installed moto's version, from its distribution's metadata: importing moto to read
    ``moto.__version__`` would cost the import this module exists to put off."""
    try:
        return version("moto")
    except PackageNotFoundError:
        return "unknown"


__all__ = [
    "FAST_ENV",
    "MOTO_OLDEST",
    "MOTO_VERSION",
    "check_speed_seams_fit",
    "installed_moto_version",
    "speed_seams_from_env",
]
