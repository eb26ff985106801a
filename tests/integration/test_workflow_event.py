"""The workflow started by one event in the deployed pipeline: the workflow state machine
(``state_machines/workflow.asl.json``) and the run state machine it starts for each run
step, executed by moto's interpreter with every Lambda task dispatched to the handlers of
``lambdas/``; the target an OpenAI-compatible model on loopback, the judge the stub. The
event's documents are in the bucket; workflow.json, every step's outputs, the workflow
report and the artifacts land under ``workflows/<id>/``; a second start with the same id
reruns nothing; a bad field fails the execution naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.validate import validate_parameters

from evalrunner.upload import is_suite_upload
from evalrunner.workflow.guardrail import validate_guardrail
from tests.support.catalog import restored_catalog
from tests.support.deployed_workflow import Stack, deployed_stack
from tests.support.judge_stub import JudgeStub
from tests.support.loopback_http import Loopback
from tests.support.redteam import PURPOSE
from tests.support.workflow import COUNTS, DOCUMENTS, WEATHER, WorkflowJudge, hr_model, target

pytestmark = pytest.mark.slow

PREFIX = "workflows/hr-1/"


@pytest.fixture(autouse=True)
def _catalog_restored() -> Iterator[None]:
    """The red-team run loads its grader into this process's catalog: put it back."""
    with restored_catalog("evalrunner.redteam.grader"):
        yield


def event(model: Loopback, stub: JudgeStub, **more: Any) -> dict[str, Any]:
    """The workflow event a user starts the state machine with."""
    return {
        "workflow_id": "hr-1",
        "target": target(model.url),
        "judge": {"openai": {"base_url": stub.url, "model": "stub-judge"}, "max_retries": 0},
        "documents": "workflow-inputs/hr/docs/",
        "counts": COUNTS,
        "metrics": ["Rouge Metric", "Refusal"],
        "fail_on": "never",
        "perturbations": [{"kind": "typos", "intensity": 0.2, "seed": 3}],
        "redteam": {
            "purpose": PURPOSE,
            "plugins": ["system-prompt-extraction", "off-topic"],
            "num_tests": 1,
            "seed": 7,
        },
        "wait_seconds": 1,
        **more,
    }


def upload_documents(stack: Stack) -> None:
    for name, text in DOCUMENTS.items():
        stack.put(f"workflow-inputs/hr/docs/{name}", text)


def steps_of(stack: Stack) -> dict[str, dict[str, Any]]:
    return {s["step"]: s for s in stack.json(PREFIX + "workflow.json")["steps"]}


def test_one_event_runs_the_whole_workflow_and_a_second_start_reruns_nothing(
    judge_stub: JudgeStub,
) -> None:
    judge = WorkflowJudge()
    judge_stub.responder = judge
    with Loopback(responder=hr_model) as model, deployed_stack() as stack:
        upload_documents(stack)
        first = stack.start(event(model, judge_stub))
        assert first["status"] == "SUCCEEDED", first
        output = json.loads(first["output"])
        steps = steps_of(stack)
        runs = stack.runs()
        asked, judged = len(model.requests), len(judge_stub.requests)

        again = stack.start(event(model, judge_stub))
        assert again["status"] == "SUCCEEDED", again
        assert len(model.requests) == asked and len(judge_stub.requests) == judged
        assert len(stack.runs()) == len(runs) == 3  # no run started again
        assert steps_of(stack) == steps  # every record reused as it was

        # the execution's output: the verdict and where the report is
        assert output["verdict"] == "failed"
        assert output["report"] == PREFIX + "workflow-report.html"
        assert output["steps"] == {
            "generate": "done",
            "evaluate": "done",
            "robustness": "done",
            "redteam": "done",
            "calibrate": "skipped",
            "weak-spots": "done",
            "artifacts": "done",
        }
        keys = set(stack.keys(PREFIX))
        # every output the manifest names is in the bucket, as the local folder holds it
        for record in steps.values():
            for rel in record["outputs"].values():
                assert PREFIX + rel in keys, rel
        assert {PREFIX + "workflow-report.html", PREFIX + "workflow-report.json"} <= keys
        html = stack.get(PREFIX + "workflow-report.html").decode("utf-8")
        for step in ("evaluate", "robustness", "redteam"):
            assert f'href="{steps[step]["outputs"]["report"]}"' in html
            assert steps[step]["facts"]["execution"].startswith(
                "arn:aws:states:us-east-1:123456789012:execution:evalrunner-test-runner:hr-1-"
            )
        report = stack.json(PREFIX + "workflow-report.json")
        assert report["verdict"] == "failed"

        # the runs were normal runs of suites the workflow wrote (uploads that start nothing)
        suites = {r["name"].split("-")[2] for r in runs}
        assert suites == {"evaluate", "robustness", "redteam"}
        written = sorted(stack.keys("test-suites/"))
        # the three runs' suites, and the placeholder the test's stack put there
        assert len(written) == 4 and written[0] == "test-suites/_placeholder.csv"
        assert all(k.startswith("test-suites/_workflow/hr-1/") for k in written[1:])
        # the upload trigger starts no run for them (as for the monitor's folder)
        assert [k for k in written if is_suite_upload(k)] == ["test-suites/_placeholder.csv"]
        summary = stack.json(PREFIX + steps["robustness"]["outputs"]["summary"])
        assert [r["name"] for r in summary["robustness"]] == ["typos"]
        problems = stack.json(PREFIX + steps["redteam"]["outputs"]["problems"])
        assert {p["finding"]["plugin"] for p in problems if p["type"] == "redteam"} == {
            "system-prompt-extraction",
            "off-topic",
        }
        weak = stack.json(PREFIX + "weak-spots/weak-spots.json")
        assert WEATHER in {c["question"] for c in weak["failing"]}

        # the artifacts; the guardrail passes botocore's validation of CreateGuardrail
        guardrail = stack.json(PREFIX + "artifacts/guardrail.json")
        validate_guardrail(guardrail)
        bedrock = botocore.session.get_session().create_client("bedrock", region_name="us-east-1")
        validate_parameters(
            guardrail, bedrock.meta.service_model.operation_model("CreateGuardrail").input_shape
        )
        assert {t["name"] for t in guardrail["topicPolicyConfig"]["topicsConfig"]} == {
            "Off-topic requests",
            "Assistant instructions",
        }
        assert stack.get(PREFIX + "artifacts/system-prompt-extension.txt").startswith(
            b"Additional rules:"
        )
        # the judge's replies are cached in the bucket, as a deployed run's are
        assert stack.keys("judge-cache/")


def test_a_failed_step_fails_the_execution_and_the_next_start_resumes_there(
    tmp_path: Any, judge_stub: JudgeStub
) -> None:
    from tests.integration.test_workflow import labelled_suite

    judge_stub.responder = WorkflowJudge()
    suite, labels = labelled_suite(tmp_path)
    with Loopback(responder=hr_model) as model, deployed_stack() as stack:
        stack.put("workflow-inputs/hr/suite.json", suite.read_bytes())
        stack.put("workflow-inputs/hr/labels.csv", "case_id,verdict\nleave,pass\n")
        settings = event(
            model,
            judge_stub,
            documents=None,
            suite="workflow-inputs/hr/suite.json",
            labels="workflow-inputs/hr/labels.csv",
            metrics=["Rouge Metric"],
            redteam={"purpose": PURPOSE, "plugins": ["system-prompt-extraction"], "num_tests": 1},
        )
        failed = stack.start(settings)
        assert failed["status"] == "FAILED"
        assert "human_verdict" in failed["cause"]  # the calibrate step's own message
        stopped = steps_of(stack)
        assert [r["status"] for r in stopped.values()] == [
            "skipped",
            "done",
            "done",
            "done",
            "failed",
            "pending",
            "pending",
        ]
        assert "human_verdict" in stopped["calibrate"]["error"]
        report = stack.json(PREFIX + "workflow-report.json")
        assert report["verdict"] == "incomplete"
        asked, runs = len(model.requests), stack.runs()

        # the labels fixed: the same event resumes at calibrate
        stack.put("workflow-inputs/hr/labels.csv", labels.read_bytes())
        resumed = stack.start(settings)
        assert resumed["status"] == "SUCCEEDED", resumed
        assert len(model.requests) == asked and len(stack.runs()) == len(runs) == 3
        after = steps_of(stack)
        for step in ("evaluate", "robustness", "redteam"):
            assert after[step] == stopped[step]  # reused as recorded
        assert after["calibrate"]["status"] == "done"
        calibration = stack.json(PREFIX + after["calibrate"]["outputs"]["calibration"])
        (rouge,) = [m for m in calibration["metrics"] if m["metric"] == "ROUGE-L"]
        assert rouge["compared"] == 4
        assert [after[s]["status"] for s in ("weak-spots", "artifacts")] == ["done", "done"]
        assert json.loads(resumed["output"])["verdict"] == "failed"


def test_a_workflow_stopped_while_its_run_runs_follows_that_run_when_started_again(
    tmp_path: Any, judge_stub: JudgeStub
) -> None:
    """Stopped (StopExecution) while it waits for its evaluate run, then started again with
    the same id: the run it started is followed, not started twice. While it ran, a second
    execution of the same id was refused."""
    from tests.integration.test_workflow import labelled_suite

    judge_stub.responder = WorkflowJudge()
    suite, _ = labelled_suite(tmp_path)
    with Loopback(responder=hr_model) as model, deployed_stack() as stack:
        stack.put("workflow-inputs/hr/suite.json", suite.read_bytes())
        settings = event(
            model,
            judge_stub,
            documents=None,
            suite="workflow-inputs/hr/suite.json",
            metrics=["Rouge Metric"],
        )
        waiting = stack.begin({**settings, "wait_seconds": 3600})
        stack.wait_for(lambda: len(stack.runs()) == 1 and stack.runs()[0]["status"] == "SUCCEEDED")
        # a second execution of the same workflow while the first runs is refused
        second = stack.start(settings)
        assert second["status"] == "FAILED"
        assert (
            f"workflow_id: 'hr-1' is being worked on by the execution {waiting}"
            in (second["cause"])
        )
        stack.sfn.stop_execution(executionArn=waiting)
        stopped = steps_of(stack)
        assert stopped["evaluate"]["status"] == "pending"  # started, never recorded as done
        resumed = stack.start(settings)
        assert resumed["status"] == "SUCCEEDED", resumed
        after = steps_of(stack)
        assert after["evaluate"]["status"] == "done"
        assert after["evaluate"]["facts"]["execution"] == stopped["evaluate"]["facts"]["execution"]
        assert [r["name"].split("-")[2] for r in stack.runs()].count("evaluate") == 1


def test_a_bad_event_field_fails_the_execution_naming_it(judge_stub: JudgeStub) -> None:
    with Loopback(responder=hr_model) as model, deployed_stack() as stack:
        bad = stack.start(event(model, judge_stub, redteam={"num_tests": 0}))
        outside = stack.start(event(model, judge_stub, documents="docs/hr/"))
        missing = stack.start(event(model, judge_stub))  # nothing uploaded
        assert [bad["status"], outside["status"], missing["status"]] == ["FAILED"] * 3
        assert "redteam.num_tests: Input should be greater than or equal to 1" in bad["cause"]
        assert "documents: 'docs/hr/' must be under workflow-inputs/" in outside["cause"]
        assert (
            "documents: nothing under s3://evalrunner-local/workflow-inputs/hr/docs/"
            in (missing["cause"])
        )
        assert not stack.keys("workflows/") and not stack.runs()
        assert not model.requests and not judge_stub.requests

        # more documents than one generate step reads: refused at Begin, nothing downloaded
        stack.put("workflow-inputs/big/a.md", b"x" * (5 * 2**20 + 1))
        big = stack.start(event(model, judge_stub, documents="workflow-inputs/big/"))
        assert big["status"] == "FAILED"
        assert "more than one generate step reads (5 MiB)" in big["cause"]
        # an object put by hand under the workflow's prefix whose key leaves its folder
        upload_documents(stack)
        stack.put(PREFIX + "../../escape.txt", "x")
        escaped = stack.start(event(model, judge_stub))
        assert escaped["status"] == "FAILED"
        assert "'../../escape.txt': an object whose key is not a plain path" in escaped["cause"]
        assert not model.requests and not judge_stub.requests and not stack.runs()


def test_the_same_event_file_runs_locally(tmp_path: Any, judge_stub: JudgeStub) -> None:
    """``evalrunner workflow --event FILE``: the event's keys read under the file's folder,
    the folder named after the workflow; a bad field is refused naming it, nothing sent."""
    from typer.testing import CliRunner

    from evalrunner.cli import app

    judge_stub.responder = WorkflowJudge()
    for name, text in DOCUMENTS.items():
        path = tmp_path / "workflow-inputs" / "hr" / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    with Loopback(responder=hr_model) as model:
        settings = event(model, judge_stub)
        settings["judge"] = {**settings["judge"], "cache_dir": str(tmp_path / "cache")}
        file = tmp_path / "event.json"
        file.write_text(json.dumps(settings), "utf-8")
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**settings, "suite": "hr.csv"}), "utf-8")
        runner = CliRunner()
        refused = runner.invoke(app, ["workflow", "--event", str(bad)], catch_exceptions=False)
        assert refused.exit_code == 2, refused.output
        assert "suite: 'hr.csv' must be under workflow-inputs/" in refused.output
        assert not model.requests and not judge_stub.requests

        out = tmp_path / "runs"
        args = ["workflow", "--event", str(file), "--json", "--no-preflight", "--out", str(out)]
        result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output  # weak spots and a leak: the workflow fails
    assert json.loads(result.stdout)["verdict"] == "failed"
    steps = {s["step"]: s for s in json.loads((out / "workflow.json").read_text())["steps"]}
    assert [s["status"] for s in steps.values()] == [
        "done",
        "done",
        "done",
        "done",
        "skipped",
        "done",
        "done",
    ]
    validate_guardrail(json.loads((out / "artifacts" / "guardrail.json").read_text("utf-8")))


def test_the_event_file_runs_on_the_deployed_workflow_with_aws(
    tmp_path: Any, judge_stub: JudgeStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evalrunner workflow --event FILE --aws``: the inputs beside the event file are
    uploaded to their keys, the deployed workflow runs, its folder is copied into --out."""
    from typer.testing import CliRunner

    from evalrunner.cli import app
    from tests.support.deployed_workflow import BUCKET, WORKFLOW_MACHINE

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # the user's configured region
    judge_stub.responder = WorkflowJudge()
    for name, text in DOCUMENTS.items():
        path = tmp_path / "workflow-inputs" / "hr" / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    with Loopback(responder=hr_model) as model, deployed_stack() as stack:
        file = tmp_path / "event.json"
        file.write_text(json.dumps(event(model, judge_stub)), "utf-8")
        out = tmp_path / "copied"
        args = ["workflow", "--event", str(file), "--aws", "--json", "--out", str(out)]
        args += ["--bucket", BUCKET, "--workflow-state-machine-arn", WORKFLOW_MACHINE]
        result = CliRunner().invoke(app, args, catch_exceptions=False)
        assert sorted(stack.keys("workflow-inputs/")) == sorted(
            f"workflow-inputs/hr/docs/{name}" for name in DOCUMENTS
        )
        assert len(stack.runs()) == 3
    assert result.exit_code == 1, result.output  # the workflow found failures
    output = json.loads(result.stdout)
    assert output["verdict"] == "failed" and output["steps"]["artifacts"] == "done"
    steps = {s["step"]: s for s in json.loads((out / "workflow.json").read_text())["steps"]}
    for record in steps.values():
        for rel in record["outputs"].values():
            assert (out / rel).is_file(), rel
    assert (out / "workflow-report.html").is_file() and not (out / "lock.json").exists()
    validate_guardrail(json.loads((out / "artifacts" / "guardrail.json").read_text("utf-8")))
