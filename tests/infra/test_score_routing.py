"""The Score step's Choice, executed by the embedded Step Functions interpreter (moto):

- locally (the engine's substitutions) every run takes the in-process Score Lambda;
- with GPU scoring deployed, a run of at least ``BatchScoringMinItems`` items is submitted to
  AWS Batch with ``.sync``; moto's Batch (docker-free) stands in for the service, and the job
  "runs" ``gpu_tasks/score_entrypoint.py`` in-process with the container environment the
  state machine passed;
- a failed job is caught: Aggregate still writes the reports.

moto 5.2.5's Batch integration hands Step Functions' PascalCase parameters (``JobName``, as the
cloud requires them) to boto unconverted, and its responses back unconverted
(``_normalise_parameters`` / ``_normalise_response`` are no-ops there); the fixture adds the
conversion real Step Functions does, from botocore's Batch model. The local engine never needs
it: it substitutes ``BatchScoringEnabled=false``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any
from unittest import mock

import boto3
import botocore.session
import pytest
from moto.batch.models import BatchBackend
from moto.batch_simple.models import BatchSimpleBackend
from moto.core.config import default_user_config
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_batch,
)

import state_machines
from evalrunner.engine.dispatch import Dispatcher, dispatching
from evalrunner.engine.embedded import ACCOUNT, BUCKET, REGION
from evalrunner.engine.local import LocalEngine
from evalrunner.engine.run_types import PIPELINE_FUNCTIONS
from evalrunner.pipeline.context import Runtime
from gpu_tasks import score_entrypoint
from lambdas.local import local_pipeline

from . import batch_helpers
from .batch_helpers import METRICS, SUITE

ITEMS = 6  # 3 cases x 2 iterations
_BATCH_MODEL = botocore.session.get_session().get_service_model("batch")


def _operation(service: Any, action: str | None) -> Any:
    snake = service._get_boto_service_action(action)  # "submit_job"
    return _BATCH_MODEL.operation_model("".join(p.title() for p in snake.split("_")))


def _normalise_parameters(self, parameters, boto_service_name=None, service_action_name=None):
    self._to_boto_request(parameters, _operation(self, service_action_name).input_shape)


def _normalise_response(self, response, boto_service_name=None, service_action_name=None):
    self._from_boto_response(response, _operation(self, service_action_name).output_shape)


@pytest.fixture
def embedded(monkeypatch):
    """The embedded runner plus a Batch queue and job definition in moto's docker-free Batch,
    whose jobs run the GPU entrypoint in-process."""
    batch_helpers.register()
    jobs: list[dict[str, Any]] = []
    original = BatchSimpleBackend.submit_job

    def submit_job(self, *args: Any, **kwargs: Any):
        overrides = kwargs.get("container_overrides") or {}
        env = {e["name"]: e["value"] for e in overrides.get("environment", [])}
        with mock.patch.dict(os.environ, env):
            code = score_entrypoint.main([])
        jobs.append({"env": env, "exit": code})
        fail = {"MOTO_SIMPLE_BATCH_FAIL_AFTER": "0"} if code else {}
        with mock.patch.dict(os.environ, fail):
            return original(self, *args, **kwargs)

    # The deployed functions' environment (the stack sets both; the engine sets neither).
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("EVALRUNNER_BUCKET", BUCKET)
    engine = LocalEngine(pipeline=local_pipeline)
    try:
        with engine.embedded_aws(), dispatching(Dispatcher(engine.functions_for(Runtime()))):
            monkeypatch.setitem(default_user_config["batch"], "use_docker", False)
            monkeypatch.setattr(BatchSimpleBackend, "submit_job", submit_job)
            service = state_task_service_batch.StateTaskServiceBatch
            monkeypatch.setattr(service, "_normalise_parameters", _normalise_parameters)
            monkeypatch.setattr(service, "_normalise_response", _normalise_response)
            engine.deploy(SUITE, "test-suites/s.csv")
            yield _Runner(jobs)
    finally:
        batch_helpers.unregister()


class _Runner:
    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self.jobs = jobs
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.arn = self.sfn.list_state_machines()["stateMachines"][0]["stateMachineArn"]

    def enable_batch(self, min_items: int, timeout_seconds: int = 3600) -> None:
        """Redeploy the definition as the cloud stack substitutes it."""
        batch = boto3.client("batch", region_name=REGION)
        role = boto3.client("iam").get_role(RoleName="evalrunner-local")["Role"]["Arn"]
        env = batch.create_compute_environment(
            computeEnvironmentName="gpu", type="UNMANAGED", state="ENABLED", serviceRole=role
        )
        queue = batch.create_job_queue(
            jobQueueName="gpu",
            state="ENABLED",
            priority=1,
            computeEnvironmentOrder=[
                {"order": 1, "computeEnvironment": env["computeEnvironmentArn"]}
            ],
        )
        job = batch.register_job_definition(
            jobDefinitionName="gpu-score",
            type="container",
            containerProperties={"image": "evalrunner-gpu-score", "vcpus": 4, "memory": 15000},
        )
        values = {
            placeholder: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
            for placeholder, name in PIPELINE_FUNCTIONS.items()
        }
        values.update(
            ChildExecutionType="STANDARD",
            BatchScoringEnabled="true",
            BatchScoringMinItems=str(min_items),
            BatchScoringTimeoutSeconds=str(timeout_seconds),
            BatchJobQueueArn=queue["jobQueueArn"],
            BatchJobDefinitionArn=job["jobDefinitionArn"],
        )
        definition = state_machines.substitute(state_machines.test_runner_asl(), values)
        self.sfn.update_state_machine(stateMachineArn=self.arn, definition=definition)

    def run(self, **extra: Any) -> tuple[dict[str, Any], list[str]]:
        event = {
            "key": "test-suites/s.csv",
            "iterations": 2,
            "target": {"url": "http://unused.invalid/ask"},
            "metrics": METRICS,
            **extra,
        }
        execution = self.sfn.start_execution(stateMachineArn=self.arn, input=json.dumps(event))
        arn = execution["executionArn"]
        deadline = time.monotonic() + 60
        while (done := self.sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.1)
        assert done["status"] == "SUCCEEDED", done
        history = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        entered = [
            e["stateEnteredEventDetails"]["name"]
            for e in history
            if e["type"].endswith("StateEntered") and "stateEnteredEventDetails" in e
        ]
        return json.loads(done["output"]), entered


def _ratio(summary: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in summary["metrics"] if m["metric"] == "Length ratio")


def test_local_runs_score_in_process(embedded):
    summary, entered = embedded.run()
    assert entered[-4:] == ["ScoringPlan", "ChooseScoring", "Score", "Aggregate"]
    assert "ScoreOnBatch" not in entered and embedded.jobs == []
    assert _ratio(summary)["count"] == ITEMS


def test_large_runs_go_to_the_gpu_batch_job(embedded):
    embedded.enable_batch(min_items=ITEMS)
    summary, entered = embedded.run()
    assert entered[-4:] == ["ScoringPlan", "ChooseScoring", "ScoreOnBatch", "Aggregate"]
    (job,) = embedded.jobs
    assert job["exit"] == 0
    assert job["env"]["EVALRUNNER_RUN_ID"] == summary["run_id"]
    assert job["env"]["EVALRUNNER_BUCKET"] == BUCKET
    ratio = _ratio(summary)  # the batch job's scores, merged by Aggregate
    assert ratio["count"] == ITEMS and ratio["max"] == pytest.approx(19 / 5)


def test_small_runs_stay_on_the_score_lambda(embedded):
    embedded.enable_batch(min_items=ITEMS + 1)
    summary, entered = embedded.run()
    assert entered[-3:] == ["ChooseScoring", "Score", "Aggregate"]
    assert embedded.jobs == [] and _ratio(summary)["count"] == ITEMS


def test_a_failed_batch_job_still_gets_its_reports(embedded, monkeypatch):
    embedded.enable_batch(min_items=1)
    monkeypatch.setattr(score_entrypoint, "score_run", _broken)
    summary, entered = embedded.run()
    assert entered[-2:] == ["ScoreOnBatch", "Aggregate"]
    assert embedded.jobs[0]["exit"] == 1
    assert summary["reports"]  # the run is reported, without the model metric's scores
    assert _ratio(summary)["count"] == 0


def _broken(context: Any) -> dict[str, Any]:
    from evalrunner.errors import StorageError

    raise StorageError("the GPU ran out of memory (simulated)")


def test_a_job_that_never_starts_ends_the_run_with_reports_and_says_why(embedded, monkeypatch):
    """A new account's G-instance quota is usually 0: the job stays RUNNABLE. ScoreOnBatch's
    TimeoutSecondsPath (here 1 s; deployed: the queue limit plus the job timeout) ends the
    wait, the Catch goes on to Aggregate, and the run's problems say why and how to fix it."""
    embedded.enable_batch(min_items=1, timeout_seconds=1)
    original = BatchBackend.describe_jobs  # the simple backend forwards it

    def runnable(self: Any, jobs: Any) -> list[dict[str, Any]]:
        return [{**job, "status": "RUNNABLE"} for job in original(self, jobs)]

    monkeypatch.setattr(BatchBackend, "describe_jobs", runnable)
    monkeypatch.setattr(score_entrypoint, "main", lambda argv: 0)  # the job never runs
    summary, entered = embedded.run()
    assert entered[-2:] == ["ScoreOnBatch", "Aggregate"]
    assert summary["reports"] and _ratio(summary)["count"] == 0
    (problem,) = [p for p in summary["problems"] if p["type"] == "scoring_failed"]
    assert problem["severity"] == "high"
    assert "States.Timeout" in problem["description"]
    assert "GPU scoring job on AWS Batch did not run" in problem["description"]
    assert "Running On-Demand G and VT instances" in problem["suggested_action"]
    assert '"scoring": "cpu"' in problem["suggested_action"]


def test_scoring_cpu_keeps_a_large_run_off_the_gpu_job(embedded):
    """The fix the problem names: "scoring": "cpu" scores in the Score Lambda."""
    embedded.enable_batch(min_items=1)
    summary, entered = embedded.run(scoring="cpu")
    assert entered[-3:] == ["ChooseScoring", "Score", "Aggregate"]
    assert embedded.jobs == [] and _ratio(summary)["count"] == ITEMS
