"""The local engine: the deployed state machine definition, executed by the Step Functions
interpreter that ships inside moto, over an embedded S3, with Lambda tasks dispatched
in-process to the handlers it is handed (the very ones in ``lambdas/``: see
``lambdas/local.py``, which composes the two).

Nothing here re-implements the pipeline: if a run works locally, the same definition and the
same handlers run in the cloud.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import boto3

import state_machines
from evalrunner import redaction
from evalrunner.engine.dispatch import Dispatcher, Handler, LambdaContext, bounded, dispatching
from evalrunner.engine.moto_compat import (
    InProcessLambdaClient,
    InProcessS3Client,
    LambdaInvoke,
    embedded_aws,
    install_bounded_retention,
    install_iterative_map_workers,
    interpreter_speedups,
)
from evalrunner.engine.moto_services import (
    InProcessStepFunctions,
    create_bucket,
    create_function,
    create_role,
)
from evalrunner.engine.real_aws import needs_real_aws, real_session, unmock
from evalrunner.engine.watchdog import Stall, Watchdog, stall_timeout_from_env
from evalrunner.errors import ConfigError, EngineStalled, ExecutionFailed
from evalrunner.gc_freeze import older_objects_frozen
from evalrunner.pipeline.context import Runtime, TargetFactory, default_target
from evalrunner.reports.publish import claiming_in
from evalrunner.reports.summary import RunSummary, summary_of_output
from evalrunner.targets.base import Target
from evalrunner.targets.lambda_function import LambdaSpec, LambdaTarget, function_name
from evalrunner.targets.registry import target_class
from evalrunner.user_cache import user_cache_dir

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
        definitions: Path | Literal["user"] | None = "user",
    ) -> None:
        """``pipeline`` builds the handlers of the state machine's functions (in the
        repository: ``lambdas.local.local_pipeline``). ``aws_session`` reaches real AWS
        targets; default: the environment's credentials. ``stall_timeout``: seconds with
        nothing running before the run is declared stuck (default
        ``EVALRUNNER_STALL_TIMEOUT``, else 120). ``definitions``: where the parsed state
        machine is kept for the next process (default: the user's cache folder,
        ``~/.cache/evalrunner/definitions``; None: in memory only)."""
        self.pipeline = pipeline
        #: Functions besides the pipeline's: targets that live inside the engine.
        self.targets = {**local_target_functions(), **(extra_functions or {})}
        self.poll_seconds = poll_seconds
        self.log_level = log_level
        self.aws_session = unmock(aws_session) if aws_session is not None else None
        self.stall_timeout = (
            stall_timeout if stall_timeout is not None else stall_timeout_from_env()
        )
        self.definitions = user_cache_dir("definitions") if definitions == "user" else definitions
        install_iterative_map_workers()
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
        if resume:
            event = {**event, "run_id": resume}

        def observe(name: str, ev: dict[str, Any], result: Any, exc: BaseException | None) -> None:
            with lock:
                if name == PIPELINE_FUNCTIONS["PrepareFunctionArn"] and result:
                    progress.total, progress.phase = int(result.get("item_count", 0)), "cases"
                    run_ids.append(str(result.get("run_id")))
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
        data = suite.read_bytes() if isinstance(suite, Path) else suite
        session = None
        judge = event.get("judge") or {}
        if needs_real_aws(event.get("target", {}), self.function_names) or "bedrock" in judge:
            session = self.aws_session or real_session()  # before the mock hides credentials
        # One runtime per run: the run's target, judge and hub, built with that session; its
        # storage reaches the embedded S3 directly (issue 18: botocore's trip was most of a
        # case's CPU), while the interpreter and the download below use boto3 as before.
        # A target Lambda the engine hosts is invoked in-process too (through the same
        # dispatcher as the state machine's tasks; the dispatcher is made below, from the
        # handlers this runtime builds, hence the late-bound route).
        s3 = embedded_s3()
        targets = self.target_factory(lambda *call: dispatcher.invoke(*call))
        functions = self.functions_for(
            Runtime(session=session, s3_client=s3, target_factory=targets)
        )
        watchdog = Watchdog(stall_timeout=self.stall_timeout)
        functions = self._bound_target(functions, event.get("target"))
        handlers = {name: watchdog.track(name, fn) for name, fn in functions.items()}
        dispatcher = Dispatcher(handlers, observer=observe)
        with (
            older_objects_frozen(),
            self.embedded_aws(),
            interpreter_speedups(self.definitions),
            dispatching(dispatcher),
            watchdog.threads.watching(),
            claiming_in(out_dir),  # the report prefix is claimed in out_dir too
        ):
            definition = self.deploy(data, event["key"])
            self.seed_reports(out_dir, event.get("target", {}))
            if resume:
                self.seed_records(out_dir, resume)
            sfn = embedded_stepfunctions()
            arn = sfn.start_execution(
                stateMachineArn=f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:evalrunner-test-runner",
                input=json.dumps(event),
            )["executionArn"]
            description = self._follow(sfn, arn, progress, lock, on_progress, watchdog, finishing)
            if isinstance(description, Stall):
                raise self._salvage(description, run_ids, progress, out_dir, handlers)
            if description["status"] != "SUCCEEDED":
                raise ExecutionFailed(_failure_message(description))
            output = json.loads(description["output"])
            summary = summary_of_output(output, _embedded_object)
            files = self._download(summary, out_dir)
        if resume:
            shutil.rmtree(_saved_run_dir(out_dir, resume), ignore_errors=True)
        return RunResult(
            summary=summary,
            execution_arn=arn,
            definition=definition,
            out_dir=out_dir,
            files=files,
            seconds=time.perf_counter() - started,
            output=output,
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

    def target_factory(self, route: LambdaInvoke) -> TargetFactory:
        """The run's target factory: a Lambda target whose function this engine hosts (by
        name, whatever the ARN form or qualifier, as the dispatcher resolves it) invokes it
        through ``route`` in-process (:class:`InProcessLambdaClient`: the same JSON bytes and
        error shape as through boto3 and moto's Lambda, without that trip's ~2 ms of CPU a
        case); every other target, a deployed Lambda included, is built as in the cloud."""
        hosted = self.function_names
        client = InProcessLambdaClient(
            route, lambda: boto3.client("lambda", region_name=REGION), region_name=REGION
        )

        def build(spec: dict[str, Any], *, session: boto3.Session | None) -> Target:
            if (
                target_class(spec) is LambdaTarget
                and function_name(str(spec["lambdaArn"])) in hosted
            ):
                return LambdaTarget(spec, session=session, client=client)
            return default_target(spec, session=session)

        return build

    # -- steps ----------------------------------------------------------------------------
    @contextmanager
    def embedded_aws(self) -> Iterator[None]:
        """The mock, the environment the handlers read, and quiet logs, for one run."""
        saved = {k: os.environ.get(k) for k in ("EVALRUNNER_BUCKET", "AWS_DEFAULT_REGION")}
        os.environ["EVALRUNNER_BUCKET"] = BUCKET
        os.environ["AWS_DEFAULT_REGION"] = REGION
        # moto's ASL parser warns once per definition that tolerated-failure fields are
        # accepted but not enforced locally; that is documented, not news for every run.
        logging.getLogger("moto.stepfunctions.parser").setLevel(logging.ERROR)
        try:
            with embedded_aws():
                yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def deploy(self, suite: bytes, key: str) -> str:
        """Create the bucket, functions and state machine inside an active embedded AWS
        (straight into moto's backends: :mod:`evalrunner.engine.moto_services`)."""
        create_bucket(BUCKET, account=ACCOUNT, region=REGION)
        embedded_s3().put_object(Bucket=BUCKET, Key=key, Body=suite)
        role = create_role(
            "evalrunner-local",
            account=ACCOUNT,
            assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )
        code = _placeholder_zip()
        for name in sorted(self.function_names):
            create_function(
                {
                    "FunctionName": name,
                    "Runtime": "python3.12",
                    "Role": role,
                    "Handler": "index.handler",
                    "Code": {"ZipFile": code},
                    "Timeout": 900,
                },
                account=ACCOUNT,
                region=REGION,
            )
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
        embedded_stepfunctions().create_state_machine(
            name="evalrunner-test-runner", definition=definition, roleArn=role
        )
        return definition

    def seed_reports(self, out_dir: Path, target: dict[str, Any]) -> int:
        """Put earlier runs' summaries and reports from ``out_dir`` into the embedded bucket,
        so a local run is compared with the previous local run of the same target.

        Only complete sets are seeded (a manifest, and summary.json and report.json as it
        lists them): a set whose copy or Aggregate was cut short is never a baseline."""
        from evalrunner.reports.publish import (
            MANIFEST_NAME,
            REPORT_NAME,
            SUMMARY_NAME,
            local_complete_sets,
            local_verified,
        )
        from evalrunner.targets.factory import target_name

        try:
            folder = out_dir / "test-reports" / target_name(target)
        except Exception:  # an invalid target fails in Prepare with a proper message
            return 0
        s3 = embedded_s3()
        count = 0
        for _, manifest_path, manifest in local_complete_sets(folder):
            base = manifest_path.relative_to(out_dir).as_posix()[: -len(MANIFEST_NAME)]
            files = {
                f"{base}{suffix}": local_verified(out_dir, manifest, f"{base}{suffix}")
                for suffix in (SUMMARY_NAME, REPORT_NAME)
            }
            if any(data is None for data in files.values()):
                continue  # incomplete or altered: not a baseline
            files[f"{base}{MANIFEST_NAME}"] = manifest_path.read_bytes()
            for key, data in files.items():
                s3.put_object(Bucket=BUCKET, Key=key, Body=data)
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
        """Put the case records a stopped run saved back into the embedded bucket."""
        folder = _saved_run_dir(out_dir, run_id)
        if not folder.is_dir():
            raise ExecutionFailed(
                f"--resume {run_id}: no saved run in {folder}; resume from the --out folder "
                "the stopped run wrote to"
            )
        s3 = embedded_s3()
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
    ) -> EngineStalled:
        """What a stuck run still owes the user: its finished cases saved for a resume, and
        reports for them, made by the same Score and Aggregate handlers the machine calls."""
        lead = f"the embedded engine stopped making progress: {stall.reason}."
        if not run_ids:
            return EngineStalled(f"{lead} No case had started; nothing was written.")
        run_id = run_ids[-1]
        saved = self._save_records(run_id, out_dir)
        state: dict[str, Any] = {
            "run_id": run_id,
            "bucket": BUCKET,
            "map_failure": {"Error": "Engine.Stalled", "Cause": stall.reason},
        }
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
            files = self._download(summary_of_output(output, _embedded_object), out_dir)
        except Exception as exc:
            return EngineStalled(
                f"{lead} {saved} finished cases were saved in "
                f"{_saved_run_dir(out_dir, run_id)}, but their reports could not be "
                f"written ({type(exc).__name__}: {exc}). To run the rest: repeat the "
                f"command with --resume {run_id}.",
                run_id=run_id,
            )
        where = files[0].parent if files else out_dir
        return EngineStalled(
            f"{lead} {saved} of {progress.total} case runs had finished; their reports are in "
            f"{where} (the others are marked as failed tasks). To run only the rest: repeat "
            f"the same command with --resume {run_id}.",
            run_id=run_id,
            files=files,
        )

    def _save_records(self, run_id: str, out_dir: Path) -> int:
        s3 = boto3.client("s3", region_name=REGION)
        folder = _saved_run_dir(out_dir, run_id) / "cases"
        folder.mkdir(parents=True, exist_ok=True)
        count = 0
        for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=f"runs/{run_id}/cases/"
        ):
            for obj in page.get("Contents", []):
                body = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
                (folder / obj["Key"].rsplit("/", 1)[-1]).write_bytes(body)
                count += 1
        return count

    def _download(self, summary: RunSummary, out_dir: Path) -> list[Path]:
        files = []
        for key in summary.reports.keys():
            path = out_dir / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_embedded_object(key))
            files.append(path)
        _download_history(summary.target, out_dir)  # not part of the set: after its manifest
        return files


def _output_pending(description: Mapping[str, Any]) -> bool:
    """moto's interpreter marks an execution SUCCEEDED a moment before it stores the output;
    a poll that lands in between must look again, not read a missing output (seen on a
    loaded CI machine as KeyError('output'))."""
    return description.get("status") == "SUCCEEDED" and "output" not in description


def embedded_s3() -> InProcessS3Client:
    """An S3 client on the embedded bucket's backend (inside the run's mock): the engine's
    own puts and gets take no trip through botocore; anything else falls back to boto3."""
    return InProcessS3Client(lambda: boto3.client("s3", region_name=REGION), account_id=ACCOUNT)


def embedded_stepfunctions() -> InProcessStepFunctions:
    """The embedded Step Functions (inside the run's mock), as a boto3-shaped client."""
    return InProcessStepFunctions(account=ACCOUNT, region=REGION)


def _embedded_object(key: str) -> bytes:
    """An object of the embedded run bucket (inside the run's mock)."""
    return bytes(embedded_s3().get_object(Bucket=BUCKET, Key=key)["Body"].read())


def _download_history(target: str, out_dir: Path) -> list[Path]:
    """The target's history page as Aggregate refreshed it (absent if that failed)."""
    from evalrunner.reports.history import history_keys

    files = []
    for key in history_keys(target):
        try:
            data = _embedded_object(key)
        except Exception:  # not written: the run's own reports are what matters
            continue
        path = out_dir / key
        path.write_bytes(data)
        files.append(path)
    return files


def _saved_run_dir(out_dir: Path, run_id: str) -> Path:
    """Where a stopped run keeps its case records for ``--resume``."""
    return out_dir / "runs" / run_id


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
