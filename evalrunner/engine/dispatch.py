"""In-process Lambda dispatch: the seam where moto's docker-free Lambda backend would return a
canned payload, we call the real handler function instead.

Errors are reported the way Lambda reports them (``X-Amz-Function-Error: Unhandled`` and an
``errorType`` / ``errorMessage`` payload), so the state machine's Retry and Catch rules see
exactly what they would see in the cloud.
"""

from __future__ import annotations

import json
import math
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalrunner.engine.moto_compat import routed_lambda_invocations
from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.http_client import ResponseTooLarge
from evalrunner.jsonout import dump_json

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class LambdaContext:
    """The attributes of the Lambda context object that handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    #: The function's limit: Lambda's longest timeout unless the local engine was given
    #: another (``--function-timeout``); ``inf``: none (a local run's default).
    timeout_s: float = 900.0
    started: float = field(default_factory=lambda: time.monotonic())

    def get_remaining_time_in_millis(self) -> int:
        """Counted from the call, as Lambda counts it: a RunCase task hands the cases it
        cannot finish in time to a new task, locally as in the cloud (without a limit,
        never: a day is always left)."""
        if math.isinf(self.timeout_s):
            return NO_LIMIT_MS
        left = self.timeout_s - (time.monotonic() - self.started)
        return max(0, int(left * 1000))


#: What a function without a time limit is told it has left: a day.
NO_LIMIT_MS = 86_400_000


class Dispatcher:
    """Maps function names to handlers and tells an observer about each invocation."""

    def __init__(
        self,
        handlers: dict[str, Handler],
        *,
        observer: Callable[[str, dict[str, Any], Any, BaseException | None], None] | None = None,
        function_timeout: float = 900.0,
    ) -> None:
        self.handlers = dict(handlers)
        self.observer = observer
        #: Each function's time limit, as its context tells it (``inf``: none).
        self.function_timeout = function_timeout
        self._lock = threading.Lock()

    def invoke(self, function_name: str, body: Any, response_headers: dict[str, str]) -> bytes:
        name = function_name.split(":function:")[-1].split(":")[0]
        handler = self.handlers.get(name)
        if handler is None:
            response_headers["x-amz-function-error"] = "Unhandled"
            return _error_payload(LookupError(f"no local handler for function {name!r}"))
        event = json.loads(body) if body else {}
        arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        try:
            context = LambdaContext(
                function_name=name, invoked_function_arn=arn, timeout_s=self.function_timeout
            )
            result = handler(event, context)
        except Exception as exc:
            if self.observer:
                self.observer(name, event, None, exc)
            response_headers["x-amz-function-error"] = "Unhandled"
            return _error_payload(exc)
        try:
            payload = dump_json(result, ascii_only=True).encode("utf-8")
        except (TypeError, ValueError) as exc:
            # What Lambda's Python runtime answers for a return value it cannot serialise
            if self.observer:
                self.observer(name, event, None, exc)
            response_headers["x-amz-function-error"] = "Unhandled"
            return dump_json(
                {
                    "errorMessage": f"Unable to marshal response: {exc}",
                    "errorType": "Runtime.MarshalError",
                    "requestId": "",
                    "stackTrace": [],
                },
                ascii_only=True,
            ).encode("utf-8")
        if self.observer:
            self.observer(name, event, result, None)
        return payload


def bounded(handler: Handler, *, name: str, timeout_s: float, max_bytes: int) -> Handler:
    """``handler`` held to the target's ``timeout_seconds`` and ``max_response_bytes``, as an
    HTTP target is: for a target function the engine hosts in-process (a Python function
    given to ``evaluate()``), which nothing else bounds.

    The call runs in a daemon thread and is waited for ``timeout_s``; past that, the case gets
    a :class:`TargetTimeout` and the run goes on. A Python thread cannot be stopped from
    outside, so a function that never returns is *abandoned*: its thread keeps running,
    holding what it holds, until it returns or the process ends (a daemon thread never keeps
    the process alive). Whatever it does later is dropped, errors included, so a late failure
    is not taken for a dying interpreter thread by the engine's watchdog. An answer over
    ``max_bytes`` of JSON is refused before it is sent anywhere."""

    def run(event: dict[str, Any], context: Any) -> Any:
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()

        def call() -> None:
            try:
                outcome.append((True, handler(event, context)))
            except BaseException as exc:  # reported to the waiting caller, never to the hook
                outcome.append((False, exc))
            finally:
                done.set()

        threading.Thread(target=call, name=f"evalrunner-target-{name}", daemon=True).start()
        if not done.wait(timeout_s):
            raise TargetTimeout(
                f"{name} did not answer within timeout_seconds={timeout_s:g}; the call was "
                "abandoned (a Python thread cannot be stopped: it runs on in the background "
                "until it returns or the process ends). Raise target.timeout_seconds if the "
                "function is just slow."
            )
        ok, value = outcome[0]
        if not ok and not isinstance(value, Exception):  # SystemExit, KeyboardInterrupt
            raise TargetError(f"{name} raised {type(value).__name__} ({value})") from value
        if not ok:
            raise value
        if isinstance(value, str) and len(value) > max_bytes:  # its JSON is longer still
            raise ResponseTooLarge(name, f"it returned {len(value):,} characters", max_bytes)
        try:
            size = len(dump_json(value, ascii_only=True))  # ASCII: characters are bytes
        except (TypeError, ValueError):
            return value  # the dispatcher reports what cannot be serialised
        if size > max_bytes:
            raise ResponseTooLarge(name, f"it returned {size:,} bytes of JSON", max_bytes)
        return value

    return run


def _error_payload(exc: BaseException) -> bytes:
    return dump_json(
        {
            "errorMessage": str(exc),
            "errorType": type(exc).__name__,
            "stackTrace": traceback.format_exception(exc)[-5:],
        },
        ascii_only=True,
    ).encode("utf-8")


@contextmanager
def dispatching(dispatcher: Dispatcher, *, direct: bool = True) -> Iterator[Dispatcher]:
    """Route moto's Lambda invocations to ``dispatcher`` for the duration of the block
    (``direct``: the interpreter's tasks without botocore's trip, a speed seam)."""
    with routed_lambda_invocations(dispatcher.invoke, direct=direct):
        yield dispatcher
