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

import json
import logging
import math
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import boto3

import state_machines
from evalrunner import redaction
from evalrunner.engine.dispatch import Dispatcher, Handler, bounded, dispatching
from evalrunner.engine.embedded import (
    ACCOUNT,
    BUCKET,
    REGION,
    embedded_s3,
    embedded_stepfunctions,
    placeholder_zip,
)
from evalrunner.engine.moto_compat import (
    InProcessLambdaClient,
    LambdaInvoke,
    check_speed_seams_fit,
    embedded_aws,
    install_bounded_retention,
    install_iterative_map_workers,
    interpreter_speedups,
    speed_seams_from_env,
)
from evalrunner.engine.moto_services import create_bucket, create_function, create_role
from evalrunner.engine.real_aws import needs_real_aws, real_session, unmock
from evalrunner.engine.report_copy import (
    DurableRecords,
    download_set,
    local_history_notices,
    os_reason,
    remove_if_empty,
)
from evalrunner.engine.run_types import (
    PIPELINE_FUNCTIONS,
    Pipeline,
    Progress,
    RunResult,
)
from evalrunner.engine.salvage import salvage
from evalrunner.engine.saved_runs import (
    check_resume,
    fingerprint,
    mark_active,
    saved_run_dir,
    this_process,
    write_marker,
)
from evalrunner.engine.stopping import GatedTarget, StopGate, StopRequested, stop_on_signals
from evalrunner.engine.watchdog import Stall, Watchdog, stall_timeout_from_env
from evalrunner.errors import ConfigError, ExecutionFailed, ReportsNotWritten
from evalrunner.pipeline.context import Runtime, Settings, TargetFactory, default_target
from evalrunner.reports.summary import RunSummary, summary_of_output
from evalrunner.reports.writers.publish import claiming_in
from evalrunner.targets.base import Target
from evalrunner.targets.lambda_function import LambdaSpec, LambdaTarget, function_name
from evalrunner.targets.registry import target_class
from evalrunner.targets.spec import TargetSpec

#: How often a run whose Aggregate has returned is polled until its execution ends.
_FINISHING_POLL_SECONDS = 0.005


def local_target_functions() -> dict[str, Handler]:
    """Targets that live inside the embedded engine, reachable as ``{"lambdaArn": NAME}``."""
    from evalrunner.demo.handler import handler as demo

    return {"evalrunner-demo-hr": demo}


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
        before_start: Callable[[], None] | None = None,
    ) -> RunResult:
        """Upload the suite to the event's key, execute the state machine, copy the reports.

        ``resume``: the run id of a run that stopped part-way (its case records were saved
        under ``out_dir/runs/<run_id>/``); the cases it finished are not run again.
        ``before_start``: called once the run's handlers are built, before the embedded AWS
        starts (its mock would catch a probe's calls to real AWS) and before anything is sent
        or written to ``out_dir``; what it raises stops the run there (the pre-flight running
        beside the engine's start-up, :func:`evalrunner.launch.start_preflight`)."""
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
        gate = StopGate()
        records = DurableRecords(embedded_s3(fast=self.fast), out_dir)

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
                        records.failure = records.failure or f"{os_reason(exc)} ({out_dir})"
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
        if before_start is not None:  # before the mock: a probe of real AWS must reach AWS
            before_start()
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
                with stop_on_signals():
                    description = self._follow(
                        sfn, arn, progress, lock, on_progress, watchdog, finishing
                    )
            except StopRequested as stop:
                gate.stop()
                raise salvage(
                    Stall(stop.reason),
                    run_ids,
                    progress,
                    out_dir,
                    handlers,
                    self._object,
                    stopped=True,
                    execution=(arn, definition, started),
                ) from None
            if isinstance(description, Stall):
                gate.stop()
                raise salvage(
                    description,
                    run_ids,
                    progress,
                    out_dir,
                    handlers,
                    self._object,
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
            notices = local_history_notices(summary.target, out_dir)
        # The run's reports are written: its saved records are no longer needed.
        for run_id in {*run_ids, *([resume] if resume else [])}:
            shutil.rmtree(saved_run_dir(out_dir, run_id), ignore_errors=True)
        remove_if_empty(out_dir / "runs")
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

    def target_factory(self, route: LambdaInvoke, gate: StopGate | None = None) -> TargetFactory:
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
            return built if gate is None else GatedTarget(built, gate)

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
        code = placeholder_zip()
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

    def _download(self, summary: RunSummary, out_dir: Path) -> list[Path]:
        return download_set(summary, self._object, out_dir)

    def _object(self, key: str) -> bytes:
        """An object of the embedded run bucket (inside the run's mock)."""
        return bytes(embedded_s3(fast=self.fast).get_object(Bucket=BUCKET, Key=key)["Body"].read())


def _output_pending(description: Mapping[str, Any]) -> bool:
    """moto's interpreter marks an execution SUCCEEDED a moment before it stores the output;
    a poll that lands in between must look again, not read a missing output (seen on a
    loaded CI machine as KeyError('output'))."""
    return description.get("status") == "SUCCEEDED" and "output" not in description


@contextmanager
def _running(run_ids: list[str]) -> Iterator[None]:
    """While inside, the runs in ``run_ids`` (filled in as Prepare returns) are running in
    this process; after, a stopped one may be resumed by this process too."""
    try:
        yield
    finally:
        for run_id in run_ids:
            mark_active(run_id, False)


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


#: The engine's names, also where they now live (the run's types, the embedded AWS, copying
#: the reports out), so callers keep one import.
__all__ = ["LocalEngine", "local_target_functions"]
