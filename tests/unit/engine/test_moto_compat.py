"""The local engine's patches still fit the moto they were written for, and do their job.

If this file fails after a moto upgrade, re-read ``evalrunner/engine/moto_compat.py`` against
the new moto before changing the pin: each test names the seam it guards.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
import textwrap
import threading
import time
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from evalrunner.engine import moto_compat
from evalrunner.engine.moto_compat import (
    MAP_WORKER_CLASSES,
    MOTO_VERSION,
    ThreadFailures,
    install_iterative_map_workers,
)

ROOT = Path(__file__).resolve().parents[3]


def test_written_for_the_pinned_moto():
    """The tests run with the moto the speed seams are written for (the dev extra pins it);
    users' installs may take any moto of the range the engine is tested with, seams off."""
    assert moto_compat.installed_moto_version() == MOTO_VERSION
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert re.search(rf'"moto=={re.escape(MOTO_VERSION)}"', pyproject)
    oldest, newest = re.escape(moto_compat.MOTO_OLDEST), re.escape(MOTO_VERSION)
    assert re.search(rf'"moto\[[^\]]*\]>={oldest},<={newest}"', pyproject)


@pytest.mark.parametrize("cls", MAP_WORKER_CLASSES, ids=lambda c: c.__name__)
def test_each_map_worker_recursion_is_a_tail_call(cls):
    """The trampoline is only correct if ``_eval_pool``'s one recursive call is its last
    statement: then running it later, in a loop, is the same as running it nested."""
    install_iterative_map_workers()
    original = cls.__dict__["_eval_pool"].__evalrunner_original__
    tree = ast.parse(textwrap.dedent(inspect.getsource(original)))
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    calls = [
        node
        for node in ast.walk(func)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_eval_pool"
    ]
    assert len(calls) == 1
    last = func.body[-1]
    assert isinstance(last, ast.Expr) and last.value is calls[0]
    assert {k.arg for k in calls[0].keywords} == {"job", "worker_frame"}


def test_installing_twice_wraps_once():
    install_iterative_map_workers()
    first = [cls.__dict__["_eval_pool"] for cls in MAP_WORKER_CLASSES]
    install_iterative_map_workers()
    assert [cls.__dict__["_eval_pool"] for cls in MAP_WORKER_CLASSES] == first


def _distributed_map(items: int) -> dict:
    """A Distributed Map over an S3 JSON array, one worker, a Pass state per item."""
    definition = {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "MaxConcurrency": 1,
                "ItemReader": {
                    "Resource": "arn:aws:states:::s3:getObject",
                    "ReaderConfig": {"InputType": "JSON"},
                    "Parameters": {"Bucket": "compat", "Key": "items.json"},
                },
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                    "StartAt": "Echo",
                    "States": {"Echo": {"Type": "Pass", "End": True}},
                },
                "End": True,
            }
        },
    }
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="compat")
        s3.put_object(Bucket="compat", Key="items.json", Body=json.dumps(list(range(items))))
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="compat",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/compat",
        )["stateMachineArn"]
        arn = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
        deadline = threading.Event()
        for _ in range(1200):  # bounded: 120 s at most, far beyond the few seconds it takes
            description = sfn.describe_execution(executionArn=arn)
            if description["status"] != "RUNNING":
                return description
            deadline.wait(0.1)
    pytest.fail("the distributed Map never finished: a worker thread died (recursion?)")


def test_one_worker_runs_more_items_than_the_recursion_limit_allows():
    """Before the fix each item cost several stack frames of one worker thread; with a
    recursion limit of 400 a worker died after a few dozen items and the Map waited forever.
    With the loop, the items a worker can run no longer depend on the recursion limit."""
    install_iterative_map_workers()
    limit = sys.getrecursionlimit()
    failures = ThreadFailures()
    sys.setrecursionlimit(400)
    try:
        with failures.watching():
            description = _distributed_map(600)
    finally:
        sys.setrecursionlimit(limit)
    assert failures.failures == []
    assert description["status"] == "SUCCEEDED"
    assert json.loads(description["output"]) == list(range(600))


# The unrelated thread's exception is raised on purpose; the hook chains to pytest's, which warns.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_thread_failures_keep_interpreter_threads_only():
    failures = ThreadFailures()

    def unrelated() -> None:
        raise ValueError("not the interpreter")

    with failures.watching():
        thread = threading.Thread(target=unrelated, name="host-thread")
        thread.start()
        thread.join()
    assert failures.failures == []


def test_only_this_module_imports_moto():
    """One place to re-read on a moto upgrade (moto_compat, its S3 half moto_s3, which it
    re-exports and this file pins, and asl_parser, which imports the parser without Batch,
    pinned by test_asl_parser_import): the rest of the package goes through them."""
    package = ROOT / "evalrunner"
    importers = [
        path.relative_to(ROOT).as_posix()
        for path in package.rglob("*.py")
        if re.search(r"^\s*(from moto[ .]|import moto\b)", path.read_text("utf-8"), re.M)
    ]
    assert sorted(importers) == [
        "evalrunner/engine/asl_parser.py",
        "evalrunner/engine/moto_compat.py",
        "evalrunner/engine/moto_s3.py",
        "evalrunner/engine/moto_services.py",
    ]


def test_patched_names_exist_and_are_put_back():
    """The caches and the Lambda seam replace moto attributes by name (setattr): a name moto
    renamed would be set beside the one it calls, silently, so each must exist, be replaced
    inside the block and be the original again after it."""
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.s3.models import S3Backend
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval import (
        resource_eval_s3 as item_reader_s3,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
        lambda_eval_utils,
    )
    from moto.stepfunctions.parser.asl.utils import json_path

    seams = [
        (json_path, "parse"),
        (result_path, "parse"),
        (lambda_eval_utils, "boto_client_for"),
        (item_reader_s3, "boto_client_for"),
        (LambdaSimpleBackend, "invoke"),
        (S3Backend, "_url_module"),
    ]
    before = [getattr(owner, name) for owner, name in seams]
    # each is read by the module's own code as a global (or called as a method), so the
    # patch reaches it
    assert "parse(" in inspect.getsource(json_path)
    assert "parse(self.result_path_src)" in inspect.getsource(result_path)
    assert "boto_client_for(" in inspect.getsource(lambda_eval_utils)
    assert "boto_client_for(" in inspect.getsource(item_reader_s3)
    assert "self._url_module" in inspect.getsource(S3Backend.__mro__[1])  # BaseBackend.urls
    with (
        moto_compat.interpreter_speedups(),
        moto_compat.routed_lambda_invocations(lambda name, body, headers: b"{}"),
    ):
        during = [getattr(owner, name) for owner, name in seams]
        assert all(now is not then for now, then in zip(during, before, strict=True))
        assert json_path.parse("$.a") is json_path.parse("$.a")  # the cache answers
        assert result_path.parse("$.result") is result_path.parse("$.result")
    assert [getattr(owner, name) for owner, name in seams] == before


def _retained_threads() -> int:
    from moto.stepfunctions.parser import utils

    return len(utils.TMP_THREADS)


def test_finished_interpreter_threads_are_not_kept_per_item():
    """moto keeps every interpreter thread in ``TMP_THREADS`` (one per Map item here, two per
    case in a run): before the fix a 600-item Map left 600 more Thread objects behind, for
    the life of the process. After it, what stays does not grow with the number of items."""
    from moto.stepfunctions.parser.asl.component.program import program

    install_iterative_map_workers()
    moto_compat.install_bounded_retention()
    # the modules that imported the list by name append to the bounded one
    assert program.TMP_THREADS is moto_compat.parser_utils.TMP_THREADS
    assert isinstance(program.TMP_THREADS, moto_compat.FinishedThreadsForgotten)
    retained = []
    for items in (300, 900):
        assert _distributed_map(items)["status"] == "SUCCEEDED"
        retained.append(_retained_threads())
    bound = moto_compat.FinishedThreadsForgotten.PRUNE_EVERY + threading.active_count()
    assert all(count <= bound for count in retained), retained


def test_distributed_map_item_events_are_not_stored():
    """A Distributed Map's items publish their events to a manager moto drops unread when the
    Map ends; it numbers them (ids stay unique) but holds none, so a Map of N items no longer
    holds 5N events (each with the case's input and output) until it ends."""
    from moto.stepfunctions.parser.api import HistoryEventType
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
        distributed_iteration_component as distributed_map,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext

    moto_compat.install_bounded_retention()
    assert distributed_map.EventManager is moto_compat.UnrecordedEventManager
    # moto builds the Map's manager by that name, inside the Map's body
    assert "EventManager()" in inspect.getsource(distributed_map)
    manager = moto_compat.UnrecordedEventManager()
    context = EventHistoryContext.of_program_start()
    ids = [manager.add_event(context, HistoryEventType.PassStateEntered) for _ in range(50)]
    assert ids == list(range(1, 51))
    assert manager.get_event_history() == []
    # and the Map still runs its items and returns their outputs in order
    assert json.loads(_distributed_map(50)["output"]) == list(range(50))


def _lambda_task_machine(route) -> tuple[dict, int]:
    """A one-Task machine (``lambda:invoke``, Catch-all) run with Lambda routed to ``route``;
    the execution's description and how many invocations went through moto's Lambda."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    definition = {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "fn", "Payload": {"n.$": "$.n"}},
                "ResultSelector": {"got.$": "$.Payload"},
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
    through_moto = []
    with (
        mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
        moto_compat.interpreter_speedups(),
        moto_compat.routed_lambda_invocations(route),
    ):
        routed = LambdaSimpleBackend.invoke

        def counted(self, *args, **kwargs):
            through_moto.append(args)
            return routed(self, *args, **kwargs)

        LambdaSimpleBackend.invoke = counted  # inside the routed block; put back by it
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="one-task",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/compat",
        )["stateMachineArn"]
        arn = sfn.start_execution(stateMachineArn=machine, input='{"n": 7}')["executionArn"]
        wait = threading.Event()
        for _ in range(600):  # bounded: 60 s, far beyond the moment it takes
            description = sfn.describe_execution(executionArn=arn)
            if description["status"] != "RUNNING" and "output" in description:
                return description, len(through_moto)
            wait.wait(0.1)
    pytest.fail("the one-task machine never finished")


def test_interpreter_lambda_tasks_reach_the_route_without_moto_lambda():
    """Issue 18: the interpreter's Lambda task calls the route directly (no botocore request,
    no trip through moto's Lambda responses) and its result is what the task sees."""
    seen = []

    def route(name: str, body: bytes, headers: dict[str, str]) -> bytes:
        seen.append((name, json.loads(body)))
        return json.dumps({"doubled": json.loads(body)["n"] * 2}).encode()

    description, through_moto = _lambda_task_machine(route)
    assert description["status"] == "SUCCEEDED"
    assert json.loads(description["output"]) == {"got": {"doubled": 14}}
    assert seen == [("fn", {"n": 7})]
    assert through_moto == 0


def test_a_failing_handler_is_still_a_lambda_function_error():
    """The header the dispatcher sets becomes ``FunctionError``, so Catch sees the handler's
    own error type and message, as it did through moto's Lambda (and as in the cloud)."""

    def route(name: str, body: bytes, headers: dict[str, str]) -> bytes:
        headers["x-amz-function-error"] = "Unhandled"
        return json.dumps({"errorType": "ValueError", "errorMessage": "bad case"}).encode()

    description, _ = _lambda_task_machine(route)
    assert description["status"] == "SUCCEEDED"  # caught
    caught = json.loads(description["output"])
    assert caught["Error"] == "ValueError"
    assert "bad case" in caught["Cause"]


def test_other_invoke_parameters_go_through_moto():
    """Only FunctionName and Payload (with a synchronous InvocationType, as the Lambda target
    sends) are answered in-process; anything else (an async InvocationType, a Qualifier) is
    left to the real client, unchanged."""
    calls = []

    class Real:
        def invoke(self, **parameters):
            calls.append(parameters)
            return {"StatusCode": 202}

    client = moto_compat.InProcessLambdaClient(lambda *a: b"{}", Real)
    assert client.invoke(FunctionName="fn", Payload=b"{}", InvocationType="Event") == {
        "StatusCode": 202
    }
    assert calls == [{"FunctionName": "fn", "Payload": b"{}", "InvocationType": "Event"}]
    direct = client.invoke(FunctionName="fn", Payload=b"{}")
    assert direct["StatusCode"] == 200 and direct["Payload"].read() == b"{}"
    assert "FunctionError" not in direct
    synchronous = client.invoke(FunctionName="fn", Payload=b"{}", InvocationType="RequestResponse")
    assert synchronous["Payload"].read() == b"{}"
    assert len(calls) == 1


def test_s3_url_table_is_read_once_per_run(monkeypatch):
    """moto's S3 backend reloads ``moto.s3.urls`` (disk read and module execution) twice per
    request; within a run it is read once, and S3 still answers."""
    import importlib

    import moto.s3.models as s3_models

    reloads = []

    def counting(module):
        reloads.append(module.__name__)
        return importlib.reload(module)

    monkeypatch.setattr(s3_models, "reload", counting)  # the name the property calls
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="compat")
        s3.put_object(Bucket="compat", Key="before", Body=b"x")
        assert len(reloads) >= 2  # the reason for the cache: every request reloads
        reloads.clear()
        with moto_compat.interpreter_speedups():
            for i in range(20):
                s3.put_object(Bucket="compat", Key=f"k{i}", Body=b"x")
            assert s3.get_object(Bucket="compat", Key="k19")["Body"].read() == b"x"
        assert reloads == ["moto.s3.urls"]


def test_the_definition_is_parsed_once_per_process(monkeypatch):
    """moto parses a definition when the state machine is created (and throws the result
    away) and again when each execution starts; with the speedups on, the parser runs once
    and every caller gets its own copy of the program; executions still run it, and the
    original parser is back afterwards."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend import execution_worker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    # the two callers moto 5.2.5 has, each through the class attribute patched; each uses
    # the program only (the cache answers None for the parse tree)
    assert "AmazonStateLanguageParser.parse(" in inspect.getsource(
        StepFunctionsParserBackend._validate_definition
    )
    entry = inspect.getsource(execution_worker.ExecutionWorker._get_evaluation_entrypoint)
    assert "AmazonStateLanguageParser.parse(" in entry and entry.rstrip().endswith(")[0]")
    original = AmazonStateLanguageParser.__dict__["parse"]
    parsed, programs = [], []

    def counting(definition):
        parsed.append(definition)
        return original.__func__(definition)

    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(counting))
    monkeypatch.setattr(moto_compat, "_definition_cache", [])  # this process's, made afresh
    definition = json.dumps(
        {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": {"ok": 1}, "End": True}}}
    )
    with moto_compat.embedded_aws(), moto_compat.interpreter_speedups():
        cached = AmazonStateLanguageParser.__dict__["parse"].__func__
        assert cached is not counting

        def spying(text):
            programs.append(cached(text)[0])
            return programs[-1], None

        monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(spying))
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(
            name="once", definition=definition, roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        outputs = []
        for name in ("first", "second"):
            run = sfn.start_execution(stateMachineArn=arn, name=name)["executionArn"]
            while (found := sfn.describe_execution(executionArn=run))["status"] == "RUNNING":
                time.sleep(0.01)
            outputs.append(json.loads(found["output"]))
        monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(cached))
    assert outputs == [{"ok": 1}, {"ok": 1}]
    assert parsed == [definition]  # three parses asked for, one made
    assert len(programs) == 3 and len({id(p) for p in programs}) == 3  # each its own copy
    assert AmazonStateLanguageParser.__dict__["parse"].__func__ is counting  # put back


def test_s3_seam_calls_fit_the_backend():
    """The in-process S3 client calls moto's S3 backend with these names and keywords, and
    mirrors what moto's HTTP layer does around them (the ``If-None-Match: *`` check, the
    metadata and ACL set after the put): if moto moves either, this fails before a run does."""
    from moto.s3.models import FakeKey, S3Backend
    from moto.s3.responses import S3Response

    def params(function):
        return set(inspect.signature(function).parameters)

    assert {"bucket_name", "key_name", "value", "storage"} <= params(S3Backend.put_object)
    assert {"bucket_name", "key_name"} <= params(S3Backend.get_object)
    assert {
        "bucket",
        "prefix",
        "delimiter",
        "continuation_token",
        "start_after",
        "max_keys",
    } == params(S3Backend.list_objects_v2) - {"self"}
    assert {"metadata"} <= params(FakeKey.set_metadata) and {"acl"} <= params(FakeKey.set_acl)
    put = inspect.getsource(S3Response.put_object)
    for step in (
        'if_none_match == "*"',
        "self.backend.put_object(",
        "new_key.set_metadata(metadata)",
        "new_key.set_acl(acl)",
    ):
        assert step in put, step
    assert "key.storage_class in ARCHIVE_STORAGE_CLASSES" in inspect.getsource(S3Response._get_key)


def test_lambda_size_error_mirrors_moto():
    """The in-process Lambda client answers an oversized synchronous payload with moto's own
    size error (the figure, the measure and the message moto's Lambda responses use), so a
    hosted target's huge answer fails the same way with or without the trip through moto."""
    from moto.awslambda.responses import LambdaResponse

    source = inspect.getsource(LambdaResponse.invoke)
    assert f"sys.getsizeof(payload) > {moto_compat.MAX_SYNC_PAYLOAD}" in source
    assert moto_compat._TOO_LARGE["errorType"] in source
    assert moto_compat._TOO_LARGE["errorMessage"] in source
    client = moto_compat.InProcessLambdaClient(lambda *a: b'"' + b"x" * 6_000_000 + b'"', None)
    answer = client.invoke(FunctionName="fn", Payload=b"{}", InvocationType="RequestResponse")
    assert answer["FunctionError"] == "Unhandled"
    assert json.loads(answer["Payload"].read()) == moto_compat._TOO_LARGE
