"""Pre-flight: one call to the target and one to the judge before a suite runs.

A newcomer's first mistakes — the target is not running, its response has the answer under a
key evalrunner does not look for, the judge's API key is not set — would otherwise be found
only after every case had been sent (and every judge call paid for), as a wall of identical
errors. One probe each finds them in seconds, and the run stops before anything is spent with
the message that names the fix (``"answer_path": ...`` written in full, from the probe's own
response). The probe's answer is thrown away: it is never a case of the run.

Not probed: logged answers (no target is called), a Lambda function the local engine hosts
in-process (the demo assistant, a Python callable given to :func:`evalrunner.evaluate`: it
runs in this very process, its errors are raised with its own traceback), and the judge when
no selected metric or perturbation uses it. ``--no-preflight`` / ``preflight=False`` skip it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from evalrunner.errors import EvalRunnerError

if TYPE_CHECKING:
    from evalrunner.event import RunEvent
    from evalrunner.suite.model import Suite

#: Retries a probe makes at most: one, for a blip; a dead endpoint must not cost the whole
#: retry budget before the user hears about it.
PROBE_RETRIES = 1

SKIP_HINT = "(--no-preflight skips this check)"


class PreflightFailed(EvalRunnerError):
    """The pre-flight probe of the target or the judge failed: nothing was run or spent.

    ``what`` is ``"target"`` or ``"judge"``."""

    code = "PreflightFailed"

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__(
            f"pre-flight: the {what} could not be used, so the run was not started (no case "
            f"was sent, nothing was spent).\n{reason}\n{SKIP_HINT}"
        )


class _Probe(BaseModel):
    """The judge's probe reply; any reply at all proves the endpoint and the key."""

    ok: bool = True


def preflight(event: RunEvent, suite: Suite, *, hosted: Collection[str] = ()) -> None:
    """Probe the target with the suite's first case and, when the run uses the judge, the
    judge with one tiny question. Raises :class:`PreflightFailed` naming the fix.

    ``hosted``: names of Lambda functions the local engine runs in-process (not probed)."""
    for call in probes(event, suite, hosted=hosted):
        call()


def probes(
    event: RunEvent, suite: Suite, *, hosted: Collection[str] = ()
) -> list[Callable[[], None]]:
    """The pre-flight's calls, in order (the target's, then the judge's), not yet made:
    deciding which are needed resolves the metrics (imports), making them waits on the
    network, so :class:`InBackground` can make them while the engine starts."""
    calls: list[Callable[[], None]] = []
    if suite.cases and _calls_target(event, hosted):
        calls.append(functools.partial(probe_target, event.target, suite.cases[0]))
    if event.judge is not None and uses_judge(event):
        calls.append(functools.partial(probe_judge, event.judge))
    return calls


class InBackground:
    """The pre-flight's calls made in a thread while the engine starts (its imports, the
    state machine's definition, the run's runtime: ~1-2 s of CPU that the probe's wait on
    the target used to add to every run, issue 31 goal 3), joined by :meth:`wait` before
    the first case is sent. Made in the given order, the first failure ends them, as in
    :func:`preflight`; :meth:`wait` raises it (a :class:`PreflightFailed`, or the error the
    probe's set-up raised), and again if called again, so nothing starts after it."""

    def __init__(self, calls: Sequence[Callable[[], None]]) -> None:
        self._error: BaseException | None = None
        # a daemon: a run stopped with Ctrl-C does not wait for a probe's timeout to exit
        self._thread = threading.Thread(
            target=self._make, args=(list(calls),), name="evalrunner-preflight", daemon=True
        )
        self._thread.start()

    def _make(self, calls: list[Callable[[], None]]) -> None:
        try:
            for call in calls:
                call()
        except BaseException as exc:  # handed to the thread that waits, which raises it
            self._error = exc

    def wait(self) -> None:
        """Return once every call succeeded; raise the first failure otherwise."""
        self._thread.join()
        if self._error is not None:
            raise self._error


def _calls_target(event: RunEvent, hosted: Collection[str]) -> bool:
    kind = event.target_kind
    if kind == "logged":
        return False
    return not (kind == "lambdaArn" and str(event.target.get("lambdaArn")) in hosted)


def uses_judge(event: RunEvent) -> bool:
    """Whether any selected metric, or a perturbation, asks the judge."""
    from evalrunner.evaluators import registry
    from evalrunner.perturb.registry import KINDS

    if any(KINDS[p.kind].needs_judge for p in event.perturbations):
        return True
    return any(
        registry.resolve(name).uses_judge(event.evaluator_options.get(name))
        for name in event.metrics
    )


def probe_target(spec: dict[str, Any], case: Any) -> None:
    """One call of ``case`` to the target ``spec`` names (at most one retry); its answer is
    dropped. Raises PreflightFailed with the target's own error, which names the fix."""
    from evalrunner.targets.factory import build_target

    probe_spec = {**spec, "max_retries": min(int(spec.get("max_retries", 3)), PROBE_RETRIES)}
    first = case.model_copy(update={"conversation": []}) if case.conversation else case
    try:
        build_target(probe_spec).invoke(first)
    except EvalRunnerError as exc:
        raise PreflightFailed("target", exc.message) from None
    except Exception as exc:  # a client library's own error: said in words, never a repr
        raise PreflightFailed("target", describe_exception(exc)) from None


def probe_judge(judge: dict[str, Any]) -> None:
    """One small uncached question to the judge (at most one retry). A reply that does not
    parse still proves the endpoint and the key, so only a failed call fails the probe."""
    from evalrunner.judge.base import JudgeParseError, Message
    from evalrunner.judge.config import JudgeConfig
    from evalrunner.judge.factory import build_judge

    try:
        config = JudgeConfig.model_validate(
            {
                **judge,
                "cache": False,
                "max_retries": min(int(judge.get("max_retries", 4)), PROBE_RETRIES),
            }
        )
        build_judge(config).ask(
            [Message(role="user", content='Reply with the JSON object {"ok": true}.')],
            _Probe,
            purpose="pre-flight",
        )
    except JudgeParseError:
        return
    except EvalRunnerError as exc:
        raise PreflightFailed("judge", exc.message) from None
    except Exception as exc:
        raise PreflightFailed("judge", describe_exception(exc)) from None


def describe_exception(exc: BaseException) -> str:
    """An unexpected library error in words: its message, not its class or repr."""
    text = str(exc).strip()
    return text or "the call failed without a message"


__all__ = [
    "PROBE_RETRIES",
    "InBackground",
    "PreflightFailed",
    "preflight",
    "probe_judge",
    "probe_target",
    "probes",
]
