"""One exception hierarchy whose messages are written for the user who must fix the input.

Every error raised on purpose by evalrunner derives from :class:`EvalRunnerError`. Its message
says what is wrong and how to fix it; the CLI prints it as-is and exits non-zero, and the
Prepare step of the state machine fails the execution with it.
"""

from __future__ import annotations

from typing import Any

from evalrunner.redaction import redact


class EvalRunnerError(Exception):
    """Base class: the message is shown to the user verbatim."""

    #: Short machine-readable kind, used as the Step Functions error name.
    code: str = "EvalRunnerError"

    def __init__(self, message: str) -> None:
        # Every message a user sees passes here: a registered secret (a target echoing its
        # Authorization header in an error body) never reaches a report, a log or a terminal.
        message = redact(message)
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class EventError(EvalRunnerError):
    """The run's event JSON breaks the contract (see ``evalrunner schema event``)."""

    code = "InvalidEvent"

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"The event is not valid:\n{lines}")


class SuiteError(EvalRunnerError):
    """The test suite cannot be read; the message names sheet, row and column where known."""

    code = "InvalidSuite"

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        sheet: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        self.source, self.sheet, self.row, self.column = source, sheet, row, column
        where = [
            part
            for part in (
                source,
                f"sheet '{sheet}'" if sheet else None,
                f"row {row}" if row is not None else None,
                f"column '{column}'" if column else None,
            )
            if part
        ]
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)


class ConfigError(EvalRunnerError):
    """A setting (target spec, thresholds, gates, judge, models) is malformed."""

    code = "InvalidConfig"


class PluginError(ConfigError):
    """A metric in the user's own code cannot be used: its module (``--plugin``, the event's
    ``plugins``, an ``evalrunner.evaluators`` entry point) does not import, or it names a
    metric that a built-in evaluator (or another plugin) already has. Bad input, like any
    other setting: the message names the module and what to change."""

    code = "InvalidPlugin"


class TargetError(EvalRunnerError):
    """Calling the target failed; recorded on the case, never fatal for the run."""

    code = "TargetError"

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class TargetTimeout(TargetError):
    code = "TargetTimeout"


class StorageError(EvalRunnerError):
    """An object the run needs is missing or unreadable in the run bucket."""

    code = "StorageError"


class ObjectMissing(StorageError):
    """The object does not exist (as opposed to one the role may not read): the one case a
    caller may take as "nothing there yet"."""


class ExecutionFailed(EvalRunnerError):
    """The state machine execution itself failed (not a single case)."""

    code = "ExecutionFailed"


class PartialRun(ExecutionFailed):
    """A run that ended part-way: carries the run id to resume and the reports written for
    the cases that did finish."""

    def __init__(
        self,
        message: str,
        *,
        run_id: str | None = None,
        files: list[Any] | None = None,
        result: object | None = None,
    ):
        super().__init__(message)
        self.run_id = run_id
        self.files = list(files or [])
        #: the partial run (the engine's ``RunResult``; its summary's verdict is ``partial``)
        #: when its reports were written: the CLI reports it like any finished run (verdict
        #: line, CI files). Typed ``object`` here because this module, imported by every
        #: other, names none of their types (the engine imports it, not the other way).
        self.result = result


class EngineStalled(PartialRun):
    """The embedded engine stopped making progress (a dead interpreter thread, a lost job)."""

    code = "EngineStalled"


class RunStopped(PartialRun):
    """A local run was stopped part-way (SIGTERM, Ctrl-C): the reports of the cases that
    finished are written, marked partial, and the run id resumes the rest."""

    code = "RunStopped"


class ReportsNotWritten(ExecutionFailed):
    """The run's reports could not be written (a full disk, an I/O error): a failed run, not a
    failed gate. The set has no manifest, so it is never taken as a baseline."""

    code = "ReportsNotWritten"
