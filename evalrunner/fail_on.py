"""The choices of ``--fail-on`` (and the event's ``fail_on``): what fails a run.

Apart from :mod:`evalrunner.reports.verdict`, which applies them, because the CLI's options
name the choices and ``evalrunner --help`` should not import pydantic and the verdict's
models to list four words (issue 31: start-up); the verdict module re-exports the enum.
"""

from __future__ import annotations

from enum import StrEnum


class FailOn(StrEnum):
    """What fails a run (``--fail-on``, the event's ``fail_on``)."""

    #: a case below a primary metric's threshold, a gate, too many errors (the default)
    FAILURES = "failures"
    #: a regression against the baseline, a gate, too many errors
    REGRESSIONS = "regressions"
    #: a gate, too many errors
    ERRORS = "errors"
    #: nothing but a run that stopped or got no answer at all
    NEVER = "never"
