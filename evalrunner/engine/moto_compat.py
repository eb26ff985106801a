"""Everything the local engine changes inside moto's Step Functions interpreter, in one place.

Written for moto 5.2.5 (``MOTO_VERSION``); ``tests/unit/engine/test_moto_compat.py`` names that
version and checks each patch still fits the code it patches, so a moto upgrade that moves
one of these seams fails there, loudly, rather than in a user's run.

**One switch** (``LocalEngine(fast=...)``, else ``EVALRUNNER_ENGINE_FAST``:
:func:`speed_seams_from_env`) turns every speed seam below on or off: the definition and
JSONPath caches, the boto3-client and S3 URL caches, the bounded retention, and the direct
paths to moto's backends (the in-process S3 with its ``CompactKey`` objects, Lambda and Step
Functions clients). Off, a run's every AWS call goes through boto3, botocore and moto's HTTP
layer, as a deployed run's go through botocore to AWS;
``tests/integration/test_engine_seams_off.py`` runs a suite both ways and compares the
reports. Two patches are always on: the Map-worker fix (a correctness
fix) and the Lambda backend seam (how moto's Lambda reaches the handlers at all). Those two
fit moto ``MOTO_OLDEST`` to ``MOTO_VERSION``, so the ``local`` extra allows that range, and on
a moto other than ``MOTO_VERSION`` the seams are off unless asked for (then refused).

What is patched, and why:

- **Map workers loop instead of recursing.** moto's Map workers (the inline iteration worker
  and the two distributed ones, vendored from LocalStack) take their next job by calling
  ``_eval_pool`` recursively, once per item, so a worker that runs more than about 985 items
  dies with ``RecursionError`` in its thread and the Map waits forever for jobs nobody runs.
  In each of them the recursive call is the method's last statement (a tail call), so a
  trampoline turns it into a loop without copying moto's bodies: the patched method runs the
  original, and a nested call only records its arguments for the loop to run next.
  The upstream report is ``docs/upstream/moto-map-worker-recursion.md``.
- **The definition is parsed once per process, not twice per run**: moto's ANTLR parser
  reads it when the state machine is created (to validate it; the result is thrown away) and
  again when the execution starts; each call now gets a fresh copy of a program parsed once
  and kept in memory (:mod:`evalrunner.engine.definition_cache`). About 0.05–0.13 s a run.
- **Three caches** (JSONPath parsing, boto3 clients for Lambda tasks, S3's URL table): moto
  rebuilds a yacc JSONPath parser per path (and per Task's ``ResultPath``) and a boto3 client
  per task, and its S3 backend
  re-imports ``moto.s3.urls`` (``importlib.reload``: the .pyc read from disk and executed)
  twice per S3 request, so that a change of custom endpoints in the environment is seen; the
  cached versions return the same objects (the URL table read once per run, at its first S3
  call), so behaviour is unchanged and the per-case overhead roughly halves.
- **The Lambda seam**: where moto's docker-free Lambda backend would return a canned payload,
  the engine's dispatcher calls the real handler; and the interpreter's own Lambda tasks, and
  a Lambda target the engine hosts (given to the run's target factory, not patched in),
  reach the dispatcher directly, without a trip through botocore and moto's HTTP layer
  (issue 18: that trip was CPU time under the GIL that no other case could use).
- **The S3 seam** (issue 18, in :mod:`evalrunner.engine.moto_s3`, re-exported here and pinned
  by the same test): the run's own storage (every handler's ``RunStore``) reaches
  moto's S3 backend directly (:class:`InProcessS3Client`), without botocore serialising each
  put and get and moto's HTTP layer parsing it back: about 85% of run_case's CPU per case was
  that trip. The interpreter's ItemReader (the Map's read of the batches file) gets the same
  client. Objects land in the same backend, so a boto3 client against the mock sees them as
  if they had been put through it, and the other way round. The engine's own control plane
  (deploy, start, poll, download) reaches the backends directly too
  (:mod:`evalrunner.engine.moto_services`): a local run makes no botocore request at all.
- **The embedded AWS and the way out of it**: ``embedded_aws`` is moto's ``mock_aws`` with the
  interpreter executing definitions and Lambda without Docker; ``detach_request_hook`` removes
  moto's botocore hook from one session, so a real AWS target is called for real.
- **Nothing is retained per Map item** (issue 18). moto appends every interpreter thread (two
  per case: the item's program and its Task's timeout thread) to a module-level list,
  ``TMP_THREADS``, that nothing ever reads or empties, so a process kept every finished
  ``Thread`` of every run; and a Distributed Map gives its items a fresh ``EventManager`` whose
  history (five events per case, each with the case's input and output JSON) nobody can read
  (the parent execution's history never sees it, and it is dropped when the Map ends) but
  which grows until the Map ends. The list is swapped for one that forgets finished threads,
  and the Map's event manager for one that numbers events without storing them.
- **The parser is imported without moto's Batch and EC2 models** (issue 31), in
  :mod:`evalrunner.engine.asl_parser`: no moto code is changed, the Batch package's
  ``__init__`` is kept from running while the parser imports its ``JobStatus``.
- **Thread failures are collected**, not only printed: an interpreter thread that dies is the
  one failure the interpreter itself never reports, so the engine's watchdog reads them here.
"""

from __future__ import annotations

import functools
import io
import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.models import DEFAULT_ACCOUNT_ID, botocore_stubber
from moto.s3.models import S3Backend
from moto.stepfunctions.parser import utils as parser_utils
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval import (
    resource_eval_s3 as item_reader_s3,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
    distributed_iteration_component as distributed_map,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
    iteration_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
    distributed_item_processor_worker as distributed_processor,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator import (
    distributed_iterator_worker as distributed_iterator,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
from moto.stepfunctions.parser.asl.utils import json_path

from evalrunner.engine.asl_parser import AmazonStateLanguageParser
from evalrunner.engine.definition_cache import DefinitionCache
from evalrunner.engine.moto_s3 import InProcessS3Client
from evalrunner.engine_switch import (
    FAST_ENV,
    MOTO_OLDEST,
    MOTO_VERSION,
    check_speed_seams_fit,
    installed_moto_version,
    speed_seams_from_env,
)

#: The classes whose ``_eval_pool`` recurses once per Map item in moto 5.2.5.
MAP_WORKER_CLASSES: tuple[type, ...] = (
    iteration_worker.IterationWorker,
    distributed_processor.DistributedItemProcessorWorker,
    distributed_iterator.DistributedIteratorWorker,
)

_PENDING = "_evalrunner_pending_pool"
_LOOPING = "_evalrunner_pool_looping"

# The attributes patched below, by name: setattr/getattr because each is either a name a moto
# module imports from elsewhere (moto does not re-export it, so mypy refuses ``module.name``)
# or a method replaced on its class (which mypy refuses as assignment to a method).
# tests/unit/engine/test_moto_compat.py checks each exists, is replaced and is put back.
_ORIGINAL = "__evalrunner_original__"
_EVAL_POOL = "_eval_pool"
_PARSE = "parse"  # json_path.parse, moto's import of jsonpath_ng.ext.parse
# (and result_path.parse, its import of jsonpath_ng.parse)
_CLIENT_FOR = "boto_client_for"  # lambda_eval_utils' import of utils.boto_client's
_INVOKE = "invoke"  # LambdaSimpleBackend.invoke
_THREADS = "TMP_THREADS"  # moto.stepfunctions.parser.utils' list, imported by name elsewhere
_EVENT_MANAGER = "EventManager"  # distributed_iteration_component's import of it
_URL_MODULE = "_url_module"  # S3Backend's property: moto.s3.urls, reloaded on every read
_ASL_PARSE = "parse"  # AmazonStateLanguageParser.parse, a staticmethod
_patch_lock = threading.Lock()
_definition_cache: list[DefinitionCache] = []
_caches_lock = threading.Lock()


def parsed_definitions(parser: Callable[[str], Any]) -> DefinitionCache:
    """The process's cache of parsed definitions (a run after the first in a process parses
    nothing)."""
    with _caches_lock:
        if not _definition_cache:
            _definition_cache.append(DefinitionCache(parser))
        return _definition_cache[0]


def _iterative(original: Callable[..., None]) -> Callable[..., None]:
    """A trampoline around one class's recursive ``_eval_pool``."""

    @functools.wraps(original)
    def _eval_pool(self: Any, job: Any, worker_frame: Any) -> None:
        if self.__dict__.get(_LOOPING):
            # The tail call of the original: hand the next job to the loop below.
            self.__dict__[_PENDING] = (job, worker_frame)
            return
        self.__dict__[_LOOPING] = True
        try:
            pending: tuple[Any, Any] | None = (job, worker_frame)
            while pending is not None:
                self.__dict__[_PENDING] = None
                original(self, job=pending[0], worker_frame=pending[1])
                pending = self.__dict__[_PENDING]
        finally:
            self.__dict__[_LOOPING] = False

    setattr(_eval_pool, _ORIGINAL, original)  # a function attribute: marks it as patched
    return _eval_pool


def install_iterative_map_workers() -> None:
    """Make every Map worker loop. Idempotent, and process-wide on purpose: a recursing worker
    is never what anyone wants, and patching per run would race with other runs' threads."""
    with _patch_lock:
        for cls in MAP_WORKER_CLASSES:
            current = cls.__dict__[_EVAL_POOL]
            if not hasattr(current, _ORIGINAL):
                setattr(cls, _EVAL_POOL, _iterative(current))


class FinishedThreadsForgotten(list[threading.Thread]):
    """moto's ``TMP_THREADS``, bounded: every ``PRUNE_EVERY`` appends, threads that have ended
    are dropped, so the list holds the live threads plus at most ``PRUNE_EVERY`` finished ones
    (amortised O(1) per append) instead of two ``Thread`` objects per case, forever."""

    PRUNE_EVERY = 256

    def append(self, thread: threading.Thread) -> None:
        super().append(thread)
        # No lock: a thread appended by another thread during the rebuild may be dropped from
        # the list, which is harmless, since nothing reads it (the thread runs regardless).
        if len(self) % self.PRUNE_EVERY == 0:
            self[:] = [t for t in self if t.is_alive()]


class UnrecordedEventManager(EventManager):
    """The event manager a Distributed Map gives its items: ids still advance and logging still
    runs, but no history is kept, since moto drops it unread when the Map ends."""

    def _publish_history_event(self, *args: Any, **kwargs: Any) -> None:
        return None


def install_bounded_retention() -> None:
    """Per-item retention bounded, process-wide and idempotent like the worker loop (the list
    is shared by every run's threads). Modules that imported ``TMP_THREADS`` by name already
    hold the old list: each is pointed at the new one, and the old list's live threads move."""
    with _patch_lock:
        current: list[threading.Thread] = getattr(parser_utils, _THREADS)
        if not isinstance(current, FinishedThreadsForgotten):
            bounded = FinishedThreadsForgotten(t for t in current if t.is_alive())
            for name, module in list(sys.modules.items()):
                if (
                    name.startswith("moto.stepfunctions")
                    and getattr(module, _THREADS, None) is current
                ):
                    setattr(module, _THREADS, bounded)
            current.clear()
        setattr(distributed_map, _EVENT_MANAGER, UnrecordedEventManager)


@contextmanager
def interpreter_speedups() -> Iterator[None]:
    """The JSONPath, boto3-client and S3 URL caches for the duration of one run, and the
    parsed definitions of the process (:mod:`evalrunner.engine.definition_cache`)."""
    with _patch_lock:
        original_parse: Callable[[str], Any] = getattr(json_path, _PARSE)
        original_client: Callable[..., Any] = getattr(lambda_eval_utils, _CLIENT_FOR)
        reader_client: Callable[..., Any] = getattr(item_reader_s3, _CLIENT_FOR)
        cached_parse = functools.lru_cache(maxsize=4096)(original_parse)
        original_result_parse: Callable[[str], Any] = getattr(result_path, _PARSE)
        cached_result_parse = functools.lru_cache(maxsize=4096)(original_result_parse)
        clients: dict[tuple[str, str], Any] = {}
        clients_lock = threading.Lock()

        def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
            key = (region, service)
            with clients_lock:
                if key not in clients:
                    clients[key] = original_client(
                        region=region, service=service, state_credentials=state_credentials
                    )
                return clients[key]

        def reader_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
            """The ItemReader's S3 client: the in-process one (its ``get_object`` of the
            batches file goes straight to the backend; anything else through boto3). moto's
            own ignores ``state_credentials`` and signs as the default account."""
            if service != "s3" or not botocore_stubber.enabled:
                return reader_client(
                    region=region, service=service, state_credentials=state_credentials
                )
            return InProcessS3Client(
                lambda: reader_client(region=region, service=service),
                account_id=DEFAULT_ACCOUNT_ID,
            )

        original_urls: property = S3Backend.__dict__[_URL_MODULE]
        urls_module: list[Any] = []
        urls_lock = threading.Lock()

        def url_module(backend: S3Backend) -> Any:
            with urls_lock:
                if not urls_module:  # read (and reloaded) once, at the run's first S3 call
                    urls_module.append(original_urls.__get__(backend))
                return urls_module[0]

        original_asl: staticmethod[[str], Any] = AmazonStateLanguageParser.__dict__[_ASL_PARSE]
        parsed = parsed_definitions(original_asl.__func__)

        setattr(json_path, _PARSE, cached_parse)
        setattr(result_path, _PARSE, cached_result_parse)
        setattr(lambda_eval_utils, _CLIENT_FOR, client_for)
        setattr(item_reader_s3, _CLIENT_FOR, reader_client_for)
        setattr(S3Backend, _URL_MODULE, property(url_module))
        setattr(AmazonStateLanguageParser, _ASL_PARSE, staticmethod(parsed.parse))
    try:
        yield
    finally:
        with _patch_lock:
            setattr(json_path, _PARSE, original_parse)
            setattr(result_path, _PARSE, original_result_parse)
            setattr(lambda_eval_utils, _CLIENT_FOR, original_client)
            setattr(item_reader_s3, _CLIENT_FOR, reader_client)
            setattr(S3Backend, _URL_MODULE, original_urls)
            setattr(AmazonStateLanguageParser, _ASL_PARSE, original_asl)


LambdaInvoke = Callable[[str, Any, dict[str, str]], bytes]

#: The ``invoke`` parameters the in-process client answers itself, with a synchronous
#: ``InvocationType`` (the only one a caller waits on); any other (an asynchronous or dry-run
#: invocation, a ``Qualifier``) goes the long way, through moto's Lambda.
_DIRECT_PARAMETERS = frozenset({"FunctionName", "Payload", "InvocationType"})
_SYNCHRONOUS = "RequestResponse"

#: moto's Lambda answers a synchronous payload bigger than this (``sys.getsizeof`` of the
#: bytes, as moto measures it) with Lambda's own size error instead; mirrored here so an
#: oversized answer fails the same way with or without the trip through moto (Lambda's limit
#: is 6 MB; tests/unit/engine/test_moto_compat.py pins moto's figure and message).
MAX_SYNC_PAYLOAD = 6_000_000
_TOO_LARGE = {
    "errorMessage": "Response payload size exceeded maximum allowed payload size (6291556 bytes).",
    "errorType": "Function.ResponseSizeTooLarge",
}


@dataclass(frozen=True)
class ClientMeta:
    """The part of a botocore client's ``meta`` that callers read (the Lambda target names the
    region in its error messages)."""

    region_name: str


class InProcessLambdaClient:
    """A Lambda client for functions the engine hosts: the interpreter's Lambda tasks get one
    while invocations are routed, and so does a Lambda *target* the engine hosts (a Python
    function given to ``evalrunner run`` or the API, the demo, a bench's instant target).

    Through boto3, such a call is serialised, signed and sent by botocore, parsed back by
    moto's request hook and answered by its Lambda backend through the route, and the answer
    makes the same trip back. All of it runs under the GIL, on the thread of the Map item, for
    a call that never leaves the process: it was about a fifth of the interpreter's CPU time
    per case, and for a hosted target another 2 ms a case (issue 18), time during which no
    other case could make progress. This client calls the route directly, with the payload as
    the JSON bytes Lambda would carry (the handler still gets a freshly parsed event), and
    answers with what ``invoke`` returns (``StatusCode``, ``Payload`` as a stream,
    ``FunctionError`` when the handler failed, from the same header the backend seam sets, and
    moto's size error for an oversized answer), so Retry, Catch and the Lambda target see what
    they saw before.
    """

    def __init__(
        self, invoke: LambdaInvoke, fallback: Callable[[], Any], *, region_name: str = ""
    ) -> None:
        self._invoke = invoke
        self._fallback = fallback
        self.meta = ClientMeta(region_name)

    def invoke(self, **parameters: Any) -> dict[str, Any]:
        if set(parameters) - _DIRECT_PARAMETERS or (
            parameters.get("InvocationType", _SYNCHRONOUS) != _SYNCHRONOUS
        ):
            return dict(self._fallback().invoke(**parameters))
        payload = parameters.get("Payload") or b""
        body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
        headers: dict[str, str] = {}
        data = self._invoke(str(parameters["FunctionName"]), body, headers)
        if sys.getsizeof(data) > MAX_SYNC_PAYLOAD:
            headers["x-amz-function-error"] = "Unhandled"
            data = json.dumps(_TOO_LARGE).encode("utf-8")
        response: dict[str, Any] = {
            "StatusCode": 200,
            "ExecutedVersion": "$LATEST",
            "Payload": io.BytesIO(data),
        }
        error = headers.get("x-amz-function-error")
        if error:
            response["FunctionError"] = error
        return response


@contextmanager
def routed_lambda_invocations(invoke: LambdaInvoke, *, direct: bool = True) -> Iterator[None]:
    """Send the interpreter's Lambda tasks, and any other docker-free Lambda invocation in
    the mock (a target Lambda called by a handler), to ``invoke(function_name, body,
    headers)``. The backend seam is always on (it is how the mock reaches the real handlers);
    with ``direct`` (a speed seam, :func:`speed_seams_from_env`) the interpreter's tasks skip
    botocore and moto's HTTP layer too (:class:`InProcessLambdaClient`)."""
    with _patch_lock:
        original = LambdaSimpleBackend.invoke
        client_for: Callable[..., Any] = getattr(lambda_eval_utils, _CLIENT_FOR)

        def routed_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
            def boto_client() -> Any:
                return client_for(
                    region=region, service=service, state_credentials=state_credentials
                )

            if service == "lambda":
                return InProcessLambdaClient(invoke, boto_client)
            return boto_client()

        def patched(
            self: LambdaSimpleBackend,
            function_name: str,
            qualifier: str | None,
            body: Any,
            headers: Any,
            response_headers: Any,
        ) -> bytes:
            return invoke(function_name, body, response_headers)

        setattr(LambdaSimpleBackend, _INVOKE, patched)
        if direct:
            setattr(lambda_eval_utils, _CLIENT_FOR, routed_client_for)
    try:
        yield
    finally:
        with _patch_lock:
            setattr(LambdaSimpleBackend, _INVOKE, original)
            setattr(lambda_eval_utils, _CLIENT_FOR, client_for)


@contextmanager
def embedded_aws() -> Iterator[None]:
    """Every AWS call in the block answered in-process; state machines really execute."""
    with mock_aws(
        config={
            "stepfunctions": {"execute_state_machine": True},
            "lambda": {"use_docker": False},
        }
    ):
        yield


def detach_request_hook(session: boto3.Session) -> None:
    """Clients made from ``session`` bypass the mock (moto intercepts at botocore's
    ``before-send`` event)."""
    session._session.unregister("before-send", botocore_stubber)


@dataclass(frozen=True)
class ThreadFailure:
    """An interpreter thread that ended with an exception."""

    thread_name: str
    error: str


class ThreadFailures:
    """Collects exceptions that end interpreter threads while a run is watched.

    ``threading.excepthook`` is process-wide; the collector keeps only failures whose traceback
    passes through moto's Step Functions package, so an unrelated thread of the host program
    never fails a run, and chains to the previous hook so nothing is hidden."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[ThreadFailure] = []

    @property
    def failures(self) -> list[ThreadFailure]:
        with self._lock:
            return list(self._failures)

    def _record(self, args: threading.ExceptHookArgs) -> None:
        tb = args.exc_traceback
        interpreter = False
        while tb is not None:
            if tb.tb_frame.f_globals.get("__name__", "").startswith("moto.stepfunctions"):
                interpreter = True
                break
            tb = tb.tb_next
        if interpreter:
            name = args.thread.name if args.thread is not None else "?"
            text = f"{args.exc_type.__name__}: {args.exc_value}"
            with self._lock:
                self._failures.append(ThreadFailure(name, text[:500]))

    @contextmanager
    def watching(self) -> Iterator[ThreadFailures]:
        with _patch_lock:
            previous = threading.excepthook

            def hook(args: threading.ExceptHookArgs) -> None:
                self._record(args)
                previous(args)

            threading.excepthook = hook
        try:
            yield self
        finally:
            with _patch_lock:
                if threading.excepthook is hook:
                    threading.excepthook = previous


__all__ = [
    "FAST_ENV",
    "MAP_WORKER_CLASSES",
    "MAX_SYNC_PAYLOAD",
    "MOTO_OLDEST",
    "MOTO_VERSION",
    "ClientMeta",
    "FinishedThreadsForgotten",
    "InProcessLambdaClient",
    "InProcessS3Client",
    "LambdaInvoke",
    "ThreadFailure",
    "ThreadFailures",
    "UnrecordedEventManager",
    "check_speed_seams_fit",
    "detach_request_hook",
    "embedded_aws",
    "install_bounded_retention",
    "install_iterative_map_workers",
    "installed_moto_version",
    "interpreter_speedups",
    "routed_lambda_invocations",
    "speed_seams_from_env",
]
