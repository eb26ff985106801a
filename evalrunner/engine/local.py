"""The local engine: the deployed state machine definition, executed by the Step Functions
interpreter that ships inside moto, over an embedded S3, with Lambda tasks dispatched
in-process to the handlers it is handed (the very ones in ``lambdas/``: ``lambdas/local.py``
builds them and registers that builder as an entry point, which ``evalrunner.launch`` looks
up; the engine imports nothing from ``lambdas/``). Its bucket and region reach the handlers
in their runtime's :class:`~evalrunner.pipeline.context.Settings`, not the environment.

Nothing here re-implements the pipeline: if a run works locally, the same definition and the
same handlers run in the cloud.
"""

from __future__ import annotations

import io
import json
import logging
import math
import shutil
import signal
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3

import state_machines
from evalrunner import redaction
from evalrunner.engine.dispatch import Dispatcher, Handler, LambdaContext, bounded, dispatching
from evalrunner.engine.moto_compat import (
    InProcessLambdaClient,
    InProcessS3Client,
    LambdaInvoke,
    check_speed_seams_fit,
    embedded_aws,
    install_bounded_retention,
    install_iterative_map_workers,
    interpreter_speedups,
    speed_seams_from_env,
)
from evalrunner.engine.moto_services import (
    InProcessStepFunctions,
    create_bucket,
    create_function,
    create_role,
)
from evalrunner.engine.real_aws import needs_real_aws, real_session, unmock
from evalrunner.engine.saved_runs import (
    check_resume,
    fingerprint,
    mark_active,
    saved_run_dir,
    this_process,
    write_atomically,
    write_marker,
)
from evalrunner.engine.watchdog import Stall, Watchdog, stall_timeout_from_env
from evalrunner.errors import (
    ConfigError,
    EngineStalled,
    ExecutionFailed,
    PartialRun,
    ReportsNotWritten,
    RunStopped,
)
from evalrunner.pipeline.context import Runtime, Settings, TargetFactory, default_target
from evalrunner.reports.summary import RunSummary, summary_of_output
from evalrunner.reports.writers.publish import claiming_in
from evalrunner.targets.base import ConversationSession, Target, TargetResponse
from evalrunner.targets.lambda_function import LambdaSpec, LambdaTarget, function_name
from evalrunner.targets.registry import target_class
from evalrunner.targets.spec import TargetSpec

REGION = "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "evalrunner-local"
#: How often a run whose Aggregate has returned is polled until its execution ends.
_FINISHING_POLL_SECONDS = 0.005

#: Functions the state machine calls, by the placeholder that names them.
PIPELINE_FUNCTIONS = {
    "PrepareFunctionArn": "evalrunner-prepare",
    "RunCaseFunctionArn": "evalrunner-run-case",
    "ScoreFunctionArn": "evalrunner-score",
    "AggregateFunctionArn": "evalrunner-aggregate",
}


@dataclass(frozen=True)
class PipelineHandlers:
    """The four functions the state machine calls."""

    prepare: Handler
    run_case: Handler
    score: Handler
    aggregate: Handler

    def by_name(self) -> dict[str, Handler]:
        return {
            PIPELINE_FUNCTIONS["PrepareFunctionArn"]: self.prepare,
            PIPELINE_FUNCTIONS["RunCaseFunctionArn"]: self.run_case,
            PIPELINE_FUNCTIONS["ScoreFunctionArn"]: self.score,
            PIPELINE_FUNCTIONS["AggregateFunctionArn"]: self.aggregate,
        }


class Pipeline(Protocol):
    """Builds the pipeline's handlers over a run's :class:`Runtime`; the engine calls it once
    per run, with the session that reaches real AWS from inside the mock."""

    def __call__(self, runtime: Runtime, *, log_level: str) -> PipelineHandlers: ...


def local_target_functions() -> dict[str, Handler]:
    """Targets that live inside the embedded engine, reachable as ``{"lambdaArn": NAME}``."""
    from evalrunner.demo.handler import handler as demo

    return {"evalrunner-demo-hr": demo}


@dataclass
class Progress:
    total: int = 0
    done: int = 0
    errors: int = 0
    phase: str = "starting"


@dataclass
class RunResult:
    #: the whole run summary (summary.json's content, even when the output was cut)
    summary: RunSummary
    execution_arn: str
    definition: str
    out_dir: Path
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    #: the execution's output as Step Functions returned it (what ``--json`` prints)
    output: dict[str, Any] = field(default_factory=dict)
    #: things the user should know that did not stop the run (a history page not written)
    notices: list[str] = field(default_factory=list)


class LocalEngine:
    """Runs events through the embedded state machine. One run at a time per engine."""

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        extra_functions: Mapping[str, Handler] | None = None,
        poll_seconds: float = 0.25,
        log_level: str = "WARNING",
        aws_session: boto3.Session | None = None,
        stall_timeout: float | None = None,
        fast: bool | None = None,
        function_timeout: float | None = None,
    ) -> None:
        """``pipeline`` builds the handlers of the state machine's functions (in the
        repository: ``lambdas.local.local_pipeline``, found by
        :func:`evalrunner.launch.local_pipeline`). ``aws_session`` reaches real AWS
        targets; default: the environment's credentials. ``stall_timeout``: seconds with
        nothing running before the run is declared stuck (default
        ``EVALRUNNER_STALL_TIMEOUT``, else 120). ``function_timeout``: seconds a function
        may run (default: no limit; Lambda's is 900). ``fast``: the speed seams
        in moto (caches, bounded retention, the in-process S3, Lambda and Step Functions
        clients; :mod:`evalrunner.engine.moto_compat`) on or off; default
        ``EVALRUNNER_ENGINE_FAST``, else on with the moto they are written for (5.2.5).
        Off, every AWS call of the run goes through botocore and moto's HTTP layer, as a
        deployed run's go through botocore: the same reports, slower. The Map-worker fix (a
        correctness fix) is on either way."""
        self.pipeline = pipeline
        #: Functions besides the pipeline's: targets that live inside the engine.
        self.targets = {**local_target_functions(), **(extra_functions or {})}
        self.poll_seconds = poll_seconds
        self.log_level = log_level
        self.aws_session = unmock(aws_session) if aws_session is not None else None
        self.stall_timeout = (
            stall_timeout if stall_timeout is not None else stall_timeout_from_env()
        )
        self.fast = speed_seams_from_env() if fast is None else fast
        self.function_timeout = math.inf if function_timeout is None else function_timeout
        if self.fast:
            check_speed_seams_fit()  # a moto they were not written for: say so, start nothing
        install_iterative_map_workers()
        if self.fast:
            # process-wide and never undone (other runs' threads may hold the list), so an
            # engine with the seams off in the same process keeps it: it changes no I/O path
            install_bounded_retention()

    # -- public ---------------------------------------------------------------------------
    def run(
        self,
        event: dict[str, Any],
        *,
        suite: Path | bytes,
        out_dir: Path,
        on_progress: Callable[[Progress], None] | None = None,
        resume: str | None = None,
    ) -> RunResult:
        """Upload the suite to the event's key, execute the state machine, copy the reports.

        ``resume``: the run id of a run that stopped part-way (its case records were saved
        under ``out_dir/runs/<run_id>/``); the cases it finished are not run again."""
        started = time.perf_counter()
        progress = Progress()
        lock = threading.Lock()
        run_ids: list[str] = []
        finishing = threading.Event()
        data = suite.read_bytes() if isinstance(suite, Path) else suite
        if resume:
            check_resume(out_dir, resume, event, data)  # EventError: nothing started
            event = {**event, "run_id": resume}
        marker = {
            "fingerprint": fingerprint(event, data),
            "suite": event.get("key"),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **this_process(),
        }
        gate = _StopGate()
        records = _DurableRecords(embedded_s3(fast=self.fast), out_dir)

        def observe(name: str, ev: dict[str, Any], result: Any, exc: BaseException | None) -> None:
            with lock:
                if name == PIPELINE_FUNCTIONS["PrepareFunctionArn"] and result:
                    progress.total, progress.phase = int(result.get("item_count", 0)), "cases"
                    run_ids.append(str(result.get("run_id")))
                    mark_active(run_ids[-1], True)
                    # from now on each finished case is on disk: say whose records they are
                    try:
                        write_marker(out_dir, run_ids[-1], {"run_id": run_ids[-1], **marker})
                    except OSError as exc:  # reported at the end, like a record not saved
                        records.failure = records.failure or f"{_os_reason(exc)} ({out_dir})"
                elif name == PIPELINE_FUNCTIONS["RunCaseFunctionArn"] and isinstance(result, dict):
                    # a task, or its Catch path, says how many cases it finished
                    progress.done += int(result.get("done", 0))
                    progress.errors += int(result.get("errors", 0))
                elif name == PIPELINE_FUNCTIONS["ScoreFunctionArn"]:
                    progress.phase = "aggregating"
                elif name == PIPELINE_FUNCTIONS["AggregateFunctionArn"]:
                    progress.phase = "done"
                    if exc is None:  # a failed Aggregate may be retried: poll as usual
                        finishing.set()

        redaction.register_event(event)  # its credentials are masked in the logs of its start
        session = None
        judge = event.get("judge") or {}
        if needs_real_aws(event.get("target", {}), self.function_names) or "bedrock" in judge:
            session = self.aws_session or real_session()  # before the mock hides credentials
        # One runtime per run: the run's target, judge and hub, built with that session; its
        # storage reaches the embedded S3 directly when the speed seams are on (issue 18:
        # botocore's trip was most of a case's CPU), through boto3 when they are off.
        # A target Lambda the engine hosts is invoked in-process too (through the same
        # dispatcher as the state machine's tasks; the dispatcher is made below, from the
        # handlers this runtime builds, hence the late-bound route).
        # Each case record is also written to out_dir the moment it is stored (durable:
        # a killed run keeps its finished cases for --resume); each target call passes the
        # stop gate (a stopped run starts no new call while its reports are written).
        targets = self.target_factory(lambda *call: dispatcher.invoke(*call), gate)
        functions = self.functions_for(
            Runtime(
                session=session,
                s3_client=records,
                target_factory=targets,
                settings=Settings.from_env().model_copy(
                    update={"bucket": BUCKET, "region": REGION}
                ),
            )
        )
        watchdog = Watchdog(
            stall_timeout=self.stall_timeout, function_timeout=self.function_timeout
        )
        functions = self._bound_target(functions, event.get("target"))
        handlers = {name: watchdog.track(name, fn) for name, fn in functions.items()}
        dispatcher = Dispatcher(handlers, observer=observe, function_timeout=self.function_timeout)
        speedups: AbstractContextManager[None] = (
            interpreter_speedups() if self.fast else nullcontext()
        )
        with (
            self.embedded_aws(),
            speedups,
            dispatching(dispatcher, direct=self.fast),
            watchdog.threads.watching(),
            claiming_in(out_dir),  # the report prefix is claimed in out_dir too
            _running(run_ids),
        ):
            definition = self.deploy(data, event["key"])
            self.seed_reports(out_dir, event.get("target", {}))
            if resume:
                self.seed_records(out_dir, resume)
            sfn = embedded_stepfunctions(fast=self.fast)
            arn = sfn.start_execution(
                stateMachineArn=f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:evalrunner-test-runner",
                name=str(uuid.uuid4()),  # as Step Functions names one started without a name
                input=json.dumps(event),
            )["executionArn"]
            try:
                with _stop_on_signals():
                    description = self._follow(
                        sfn, arn, progress, lock, on_progress, watchdog, finishing
                    )
            except _StopRequested as stop:
                gate.stop()
                raise self._salvage(
                    Stall(stop.reason),
                    run_ids,
                    progress,
                    out_dir,
                    handlers,
                    stopped=True,
                    execution=(arn, definition, started),
                ) from None
            if isinstance(description, Stall):
                gate.stop()
                raise self._salvage(
                    description,
                    run_ids,
                    progress,
                    out_dir,
                    handlers,
                    execution=(arn, definition, started),
                )
            if description["status"] != "SUCCEEDED":
                raise ExecutionFailed(_failure_message(description))
            output = json.loads(description["output"])
            summary = summary_of_output(output, self._object)
            try:
                files = self._download(summary, out_dir)
            except ReportsNotWritten as exc:
                raise ReportsNotWritten(
                    f"{exc.message}; the finished cases are kept: --resume {summary.run_id} "
                    "writes the reports without calling the target again"
                ) from None
            notices = _local_history(summary.target, out_dir)
        # The run's reports are written: its saved records are no longer needed.
        for run_id in {*run_ids, *([resume] if resume else [])}:
            shutil.rmtree(saved_run_dir(out_dir, run_id), ignore_errors=True)
        _remove_if_empty(out_dir / "runs")
        if records.failure is not None:
            notices.append(
                f"finished cases could not be saved for a resume ({records.failure}); the "
                "run ended, so nothing is lost"
            )
        return RunResult(
            summary=summary,
            execution_arn=arn,
            definition=definition,
            out_dir=out_dir,
            files=files,
            seconds=time.perf_counter() - started,
            output=output,
            notices=notices,
        )

    @property
    def function_names(self) -> set[str]:
        return {*PIPELINE_FUNCTIONS.values(), *self.targets}

    def functions_for(self, runtime: Runtime) -> dict[str, Handler]:
        """Every function of the embedded Lambda by name: the pipeline's, built over
        ``runtime``, and the local targets' (which may stand in for a pipeline function)."""
        pipeline = self.pipeline(runtime, log_level=self.log_level)
        return {**pipeline.by_name(), **self.targets}

    def _bound_target(self, functions: dict[str, Handler], spec: Any) -> dict[str, Handler]:
        """``functions`` with the run's target, when the engine hosts it, held to the target's
        ``timeout_seconds`` and ``max_response_bytes`` (:func:`bounded`): in-process, nothing
        else would stop a function that never returns. (Hosted inside the bound, so the
        watchdog sees an abandoned call end when the case gives up on it.)"""
        if not isinstance(spec, dict) or target_class(spec) is not LambdaTarget:
            return functions
        name = function_name(str(spec.get("lambdaArn")))
        if name not in self.targets:
            return functions
        try:
            options = LambdaTarget.parse_options(spec)
        except ConfigError:
            return functions  # Prepare fails the run with the message
        assert isinstance(options, LambdaSpec)
        fn = bounded(
            functions[name],
            name=name,
            timeout_s=options.timeout_seconds,
            max_bytes=options.max_response_bytes,
        )
        return {**functions, name: fn}

    def target_factory(self, route: LambdaInvoke, gate: _StopGate | None = None) -> TargetFactory:
        """The run's target factory: a Lambda target whose function this engine hosts (by
        name, whatever the ARN form or qualifier, as the dispatcher resolves it) invokes it
        through ``route`` in-process (:class:`InProcessLambdaClient`: the same JSON bytes and
        error shape as through boto3 and moto's Lambda, without that trip's ~2 ms of CPU a
        case); every other target, a deployed Lambda included, is built as in the cloud."""
        hosted = self.function_names
        clients: list[Any] = []  # made at the first build, inside the run's mock
        clients_lock = threading.Lock()

        def client() -> Any:
            with clients_lock:
                if not clients:
                    clients.append(
                        InProcessLambdaClient(
                            route,
                            lambda: boto3.client("lambda", region_name=REGION),
                            region_name=REGION,
                        )
                        if self.fast
                        else boto3.client("lambda", region_name=REGION)  # moto's HTTP layer
                    )
                return clients[0]

        def build(spec: TargetSpec, *, session: boto3.Session | None) -> Target:
            if isinstance(spec, LambdaSpec) and function_name(spec.lambdaArn) in hosted:
                built: Target = LambdaTarget(spec.as_written(), session=session, client=client())
            else:
                built = default_target(spec, session=session)
            return built if gate is None else _GatedTarget(built, gate)

        return build

    # -- steps ----------------------------------------------------------------------------
    @contextmanager
    def embedded_aws(self) -> Iterator[None]:
        """The mock and quiet logs, for one run (the bucket and region go to the handlers in
        their runtime's settings, not through the environment of the whole process)."""
        # moto's ASL parser warns once per definition that tolerated-failure fields are
        # accepted but not enforced locally; that is documented, not news for every run.
        logging.getLogger("moto.stepfunctions.parser").setLevel(logging.ERROR)
        with embedded_aws():
            yield

    def deploy(self, suite: bytes, key: str) -> str:
        """Create the bucket, functions and state machine inside an active embedded AWS
        (with the speed seams on, straight into moto's backends:
        :mod:`evalrunner.engine.moto_services`; off, through boto3)."""
        policy = json.dumps({"Version": "2012-10-17", "Statement": []})
        if self.fast:
            create_bucket(BUCKET, account=ACCOUNT, region=REGION)
            role = create_role("evalrunner-local", account=ACCOUNT, assume_role_policy=policy)
        else:
            boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
            role = boto3.client("iam", region_name=REGION).create_role(
                RoleName="evalrunner-local", AssumeRolePolicyDocument=policy
            )["Role"]["Arn"]
        embedded_s3(fast=self.fast).put_object(Bucket=BUCKET, Key=key, Body=suite)
        code = _placeholder_zip()
        lambda_client = None if self.fast else boto3.client("lambda", region_name=REGION)
        for name in sorted(self.function_names):
            spec: dict[str, Any] = {
                "FunctionName": name,
                "Runtime": "python3.12",
                "Role": role,
                "Handler": "index.handler",
                "Code": {"ZipFile": code},
                "Timeout": 900,
            }
            if lambda_client is None:
                create_function(spec, account=ACCOUNT, region=REGION)
            else:
                lambda_client.create_function(**spec)
        values = {
            placeholder: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
            for placeholder, name in PIPELINE_FUNCTIONS.items()
        }
        values["ChildExecutionType"] = "STANDARD"  # EXPRESS children are not parsed locally
        values["BatchScoringEnabled"] = "false"  # local runs score in-process (Score Lambda)
        values["BatchScoringMinItems"] = "0"
        values["BatchScoringTimeoutSeconds"] = "3600"  # never reached: no Batch locally
        values["BatchJobQueueArn"] = f"arn:aws:batch:{REGION}:{ACCOUNT}:job-queue/evalrunner-local"
        values["BatchJobDefinitionArn"] = (
            f"arn:aws:batch:{REGION}:{ACCOUNT}:job-definition/evalrunner-local-score:1"
        )
        definition = state_machines.substitute(state_machines.test_runner_asl(), values)
        embedded_stepfunctions(fast=self.fast).create_state_machine(
            name="evalrunner-test-runner", definition=definition, roleArn=role
        )
        return definition

    def seed_reports(self, out_dir: Path, target: dict[str, Any]) -> int:
        """Put earlier runs' summaries and reports from ``out_dir`` into the embedded bucket,
        so a local run is compared with the previous local run of the same target.

        Every finished set (one with a manifest) is seeded as it is on disk: Aggregate's
        baseline lookup checks each file against its manifest, as in the cloud, skips a set
        that fails and names it in the report ("baseline ... ignored"). A set without a
        manifest (a copy or Aggregate cut short) is not seeded: it was never finished."""
        from evalrunner.reports.writers.publish import MANIFEST_NAME, REPORT_NAME, SUMMARY_NAME
        from evalrunner.targets.factory import target_name

        try:
            folder = out_dir / "test-reports" / target_name(target)
        except Exception:  # an invalid target fails in Prepare with a proper message
            return 0
        if not folder.is_dir():
            return 0
        s3 = embedded_s3(fast=self.fast)
        count = 0
        for manifest_path in sorted(folder.glob(f"*{MANIFEST_NAME}")):
            base = manifest_path.relative_to(out_dir).as_posix()[: -len(MANIFEST_NAME)]
            for suffix in (MANIFEST_NAME, SUMMARY_NAME, REPORT_NAME):
                try:
                    data = (out_dir / f"{base}{suffix}").read_bytes()
                except OSError:  # missing: the lookup finds the set incomplete
                    continue
                s3.put_object(Bucket=BUCKET, Key=f"{base}{suffix}", Body=data)
                count += 1
        return count

    def _follow(
        self,
        sfn: Any,
        arn: str,
        progress: Progress,
        lock: threading.Lock,
        on_progress: Callable[[Progress], None] | None,
        watchdog: Watchdog,
        finishing: threading.Event | None = None,
    ) -> dict[str, Any] | Stall:
        """Poll the execution until it ends (or stalls). ``finishing`` is set when the last
        step (Aggregate) returns: from then the execution ends within moments, so it is
        polled every few milliseconds instead of waiting out ``poll_seconds`` (a quarter
        of a second of a fast run's wall time, otherwise)."""
        while True:
            description: dict[str, Any] = sfn.describe_execution(executionArn=arn)
            if on_progress:
                with lock:
                    snapshot = Progress(
                        progress.total, progress.done, progress.errors, progress.phase
                    )
                on_progress(snapshot)
            if description["status"] != "RUNNING" and not _output_pending(description):
                return description
            stall = watchdog.check()
            if stall is not None:
                return stall
            if finishing is None:
                time.sleep(self.poll_seconds)
            elif finishing.is_set():
                time.sleep(_FINISHING_POLL_SECONDS)
            else:
                finishing.wait(self.poll_seconds)  # returns at once when Aggregate returns

    def seed_records(self, out_dir: Path, run_id: str) -> int:
        """Put the case records a stopped run saved back into the embedded bucket (its
        folder was checked by :func:`check_resume` before the run started)."""
        folder = saved_run_dir(out_dir, run_id)
        s3 = embedded_s3(fast=self.fast)
        count = 0
        for path in sorted(folder.glob("cases/*.json")):
            key = f"runs/{run_id}/cases/{path.name}"
            s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
            count += 1
        return count

    def _salvage(
        self,
        stall: Stall,
        run_ids: list[str],
        progress: Progress,
        out_dir: Path,
        handlers: Mapping[str, Handler],
        *,
        stopped: bool = False,
        execution: tuple[str, str, float] = ("", "", 0.0),
    ) -> PartialRun:
        """What a stuck or stopped run still owes the user: its finished cases saved for a
        resume, and reports for them (marked partial), made by the same Score and Aggregate
        handlers the machine calls. ``execution`` is the run's (arn, definition, start time):
        the error carries the partial run as a :class:`RunResult`, so it is reported like any
        other (the verdict line, ``--junit-xml``, ``--markdown``)."""
        kind: type[PartialRun] = RunStopped if stopped else EngineStalled
        if stopped:
            lead = f"the run was stopped ({stall.reason})."
            failure = {"Error": "Engine.Stopped", "Cause": stall.reason}
        else:
            lead = f"the embedded engine stopped making progress: {stall.reason}."
            failure = {"Error": "Engine.Stalled", "Cause": stall.reason}
        if not run_ids:
            return kind(f"{lead} No case had started; nothing was written.")
        run_id = run_ids[-1]
        saved = self._save_records(run_id, out_dir)
        state: dict[str, Any] = {"run_id": run_id, "bucket": BUCKET, "map_failure": failure}
        files: list[Path] = []
        stalled_in, progress.phase = progress.phase, "salvaging"
        try:
            if stalled_in in ("starting", "cases"):
                try:
                    handlers[PIPELINE_FUNCTIONS["ScoreFunctionArn"]](
                        {"run_id": run_id, "bucket": BUCKET}, _context("evalrunner-score")
                    )
                except Exception as exc:  # reported by Aggregate as the Score failure
                    state["score_failure"] = {"Error": type(exc).__name__, "Cause": str(exc)}
            output = handlers[PIPELINE_FUNCTIONS["AggregateFunctionArn"]](
                {"state": state}, _context("evalrunner-aggregate")
            )
            salvaged = summary_of_output(output, self._object)
            files = self._download(salvaged, out_dir)
            notices = _local_history(salvaged.target, out_dir)  # listed as PARTIAL
        except Exception as exc:
            why = exc.message if isinstance(exc, ReportsNotWritten) else f"{exc!r}"
            return kind(
                f"{lead} {saved} finished cases were saved in "
                f"{saved_run_dir(out_dir, run_id)}, but their reports could not be "
                f"written: {why}. To run the rest: repeat the "
                f"command with --resume {run_id}.",
                run_id=run_id,
            )
        where = files[0].parent if files else out_dir
        arn, definition, started = execution
        result = RunResult(
            summary=salvaged,
            execution_arn=arn,
            definition=definition,
            out_dir=out_dir,
            files=files,
            seconds=time.perf_counter() - started if started else 0.0,
            output=output,
            notices=notices,
        )
        return kind(
            f"{lead} {saved} of {progress.total} case runs had finished; their reports are in "
            f"{where} (the others are marked as failed tasks). To run only the rest: repeat "
            f"the same command with --resume {run_id}.",
            run_id=run_id,
            files=files,
            result=result,
        )

    def _save_records(self, run_id: str, out_dir: Path) -> int:
        """Every record of the run in the embedded bucket, on disk (most are there already,
        written as their cases finished)."""
        s3 = boto3.client("s3", region_name=REGION)
        folder = saved_run_dir(out_dir, run_id) / "cases"
        folder.mkdir(parents=True, exist_ok=True)
        count = 0
        for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=f"runs/{run_id}/cases/"
        ):
            for obj in page.get("Contents", []):
                body = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
                write_atomically(folder / obj["Key"].rsplit("/", 1)[-1], body)
                count += 1
        return count

    def _download(self, summary: RunSummary, out_dir: Path) -> list[Path]:
        return download_set(summary, self._object, out_dir)

    def _object(self, key: str) -> bytes:
        """An object of the embedded run bucket (inside the run's mock)."""
        return bytes(embedded_s3(fast=self.fast).get_object(Bucket=BUCKET, Key=key)["Body"].read())


def download_set(summary: RunSummary, read: Callable[[str], bytes], out_dir: Path) -> list[Path]:
    """Copy the report set (each file read with ``read(key)``) into ``out_dir``, the manifest
    last, each file written whole or not at all. A write that fails (a full disk, an I/O
    error, a folder that became unwritable) is :class:`ReportsNotWritten`, naming the files
    that were written: the copy has no manifest then, so no reader (the baseline lookup
    above all) takes it."""
    files: list[Path] = []
    for key in summary.reports.keys():
        path = out_dir / key
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, read(key))
        except OSError as exc:
            raise ReportsNotWritten(_write_failure(exc, path, files)) from None
        files.append(path)
    return files


def _output_pending(description: Mapping[str, Any]) -> bool:
    """moto's interpreter marks an execution SUCCEEDED a moment before it stores the output;
    a poll that lands in between must look again, not read a missing output (seen on a
    loaded CI machine as KeyError('output'))."""
    return description.get("status") == "SUCCEEDED" and "output" not in description


def embedded_s3(*, fast: bool = True) -> Any:
    """An S3 client on the embedded bucket (inside the run's mock). ``fast`` (the speed
    seams): the engine's own puts and gets take no trip through botocore
    (:class:`InProcessS3Client`; anything else falls back to boto3); else a boto3 client."""
    if not fast:
        return _LateClient("s3")
    return InProcessS3Client(lambda: boto3.client("s3", region_name=REGION), account_id=ACCOUNT)


class _LateClient:
    """A boto3 client made at its first call: a client takes its credentials when it is
    made, and the run's storage is made before the run's mock (and its credentials) starts."""

    def __init__(self, service: str) -> None:
        self._service = service
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not ours to forward (and no recursion before __init__)
            raise AttributeError(name)
        with self._lock:
            if self._client is None:
                self._client = boto3.client(self._service, region_name=REGION)
        return getattr(self._client, name)


def embedded_stepfunctions(*, fast: bool = True) -> Any:
    """The embedded Step Functions (inside the run's mock): a boto3-shaped client on moto's
    backend (``fast``, the speed seams), or a boto3 client."""
    if not fast:
        return boto3.client("stepfunctions", region_name=REGION)
    return InProcessStepFunctions(account=ACCOUNT, region=REGION)


def download_history(target: str, read: Callable[[str], bytes], out_dir: Path) -> list[str]:
    """Copy the target's history page as Aggregate refreshed it (absent if that failed).
    It is not part of the run's set (written after its manifest): a failure to write it is
    a notice for the user, not a failed run."""
    from evalrunner.reports.writers.history import history_keys

    notices = []
    for key in history_keys(target):
        try:
            data = read(key)
        except Exception:  # not written: the run's own reports are what matters
            continue
        path = out_dir / key
        try:
            write_atomically(path, data)
        except OSError as exc:
            notices.append(f"the history page {path} was not updated: {_os_reason(exc)}")
    return notices


def _local_history(target: str, out_dir: Path) -> list[str]:
    """Rebuild the target's history page from every complete set in ``out_dir`` (not the
    embedded bucket's, which knows only the sets seeded when this run started: runs that
    finish together would each list only themselves). Not part of the run's set: a failure
    is a notice for the user, not a failed run."""
    from evalrunner.reports.writers.history import local_history

    try:
        local_history(out_dir, target)
    except OSError as exc:
        return [f"the history page of {target} was not updated: {_os_reason(exc)}"]
    return []


def _os_reason(exc: OSError) -> str:
    """An OS error in words (``No space left on device``), without Python's wrapping."""
    return exc.strerror or type(exc).__name__


def _write_failure(exc: OSError, path: Path, written: list[Path]) -> str:
    """The one line a failed report copy prints: what failed, where, and what is left."""
    where = Path(exc.filename) if isinstance(exc.filename, str) else path
    partial = (
        f"the files written before it ({', '.join(str(p) for p in written)}) are an "
        "incomplete set with no manifest, never read as a baseline; delete them"
        if written
        else "no report file was written"
    )
    return f"the reports could not be written: {_os_reason(exc)} ({where}); {partial}"


@contextmanager
def _running(run_ids: list[str]) -> Iterator[None]:
    """While inside, the runs in ``run_ids`` (filled in as Prepare returns) are running in
    this process; after, a stopped one may be resumed by this process too."""
    try:
        yield
    finally:
        for run_id in run_ids:
            mark_active(run_id, False)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty (another run's saved records), or not there
        pass


class _StopRequested(BaseException):
    """SIGTERM or SIGINT during a local run: raised in the main thread where it waits for the
    execution, like KeyboardInterrupt (a BaseException, so no ``except Exception`` on the way
    swallows it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_SIGNAL_REASONS = {
    signal.SIGTERM: "SIGTERM: the run was asked to stop",
    signal.SIGINT: "interrupted (Ctrl-C)",
}


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """While the run is followed, SIGTERM and SIGINT stop it with its reports written (the
    handlers before are put back at once: a second Ctrl-C while the reports are written
    aborts as usual). Only on the main thread, where Python delivers signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _StopRequested(_SIGNAL_REASONS.get(signal.Signals(signum), f"signal {signum}"))

    previous = {sig: signal.signal(sig, stop) for sig in _SIGNAL_REASONS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _StopGate:
    """Closed when a run stops: a target call that has not started by then waits for good
    (in a daemon thread of the interpreter, which ends with the process), so no case is
    answered after the stopped run's reports were made, and none is paid for twice when it
    is resumed. A call already under way finishes, and its record is saved."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._never = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def pass_through(self) -> None:
        if self._stopped.is_set():
            self._never.wait()


class _GatedTarget(Target):
    """A run's target behind its :class:`_StopGate` (the kind's own class does the work)."""

    def __init__(self, inner: Target, gate: _StopGate) -> None:  # no spec parsing: inner's
        self.inner, self.gate = inner, gate
        self.spec, self.options = inner.spec, inner.options

    @property
    def name(self) -> str:
        return self.inner.name

    def invoke(self, case: Any) -> TargetResponse:
        self.gate.pass_through()
        return self.inner.invoke(case)

    def invoke_turn(self, case: Any, session: ConversationSession) -> TargetResponse:
        self.gate.pass_through()
        return self.inner.invoke_turn(case, session)

    def __getattr__(self, name: str) -> Any:  # a kind's own extras (a probe, its client)
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class _DurableRecords:
    """The embedded S3 client of a local run, which also writes each case record to
    ``out_dir/runs/<run_id>/cases/`` as it is stored: a finished case is durable the moment
    it finishes, as in the cloud (DESIGN.md), and a killed run keeps its work for
    ``--resume``. A failed disk write is remembered (and reported at the end), not raised:
    the run itself goes on in the embedded bucket."""

    def __init__(self, inner: Any, out_dir: Path) -> None:
        self._inner, self._out = inner, out_dir
        self._folders: set[Path] = set()
        self._lock = threading.Lock()
        self.failure: str | None = None

    def put_object(self, **parameters: Any) -> dict[str, Any]:
        reply: dict[str, Any] = self._inner.put_object(**parameters)
        parts = str(parameters.get("Key", "")).split("/")
        if len(parts) == 4 and parts[0] == "runs" and parts[2] == "cases":
            body = parameters.get("Body") or b""
            self._save(parts[1], parts[3], body.encode() if isinstance(body, str) else body)
        return reply

    def _save(self, run_id: str, name: str, data: bytes) -> None:
        folder = saved_run_dir(self._out, run_id) / "cases"
        try:
            if folder not in self._folders:
                folder.mkdir(parents=True, exist_ok=True)
                with self._lock:
                    self._folders.add(folder)
            write_atomically(folder / name, bytes(data))
        except OSError as exc:
            with self._lock:
                if self.failure is None:
                    self.failure = f"{_os_reason(exc)} ({folder})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def _context(name: str) -> LambdaContext:
    return LambdaContext(
        function_name=name,
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
    )


def _placeholder_zip() -> bytes:
    # moto wants a deployment package; the code that really runs is the dispatched handler.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("index.py", "def handler(event, context):\n    return event\n")
    return buf.getvalue()


def _failure_message(description: dict[str, Any]) -> str:
    """The user-facing message of a failed execution: the Lambda's own errorMessage if any."""
    error, cause = description.get("error", ""), description.get("cause", "")
    try:
        payload = json.loads(cause)
        if isinstance(payload, dict) and "errorMessage" in payload:
            return str(payload["errorMessage"])
    except (TypeError, json.JSONDecodeError):
        pass
    return f"the run failed ({error or description['status']}): {cause}".strip()


__all__ = ["BUCKET", "LocalEngine", "Pipeline", "PipelineHandlers", "Progress", "RunResult"]
