"""``evalrunner workflow`` end to end, as a user runs it: documents in; the suite generated,
evaluated, perturbed and red-teamed against an OpenAI-compatible model on loopback, graded
by the stub judge; weak spots found; and the three artifacts written — a corpus patch for
the topics the model could not answer, system-prompt rules, and a Bedrock guardrail that
botocore's service model accepts. A second call repeats nothing; a workflow stopped after
its second step resumes at the third."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber
from botocore.validate import validate_parameters
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.workflow.guardrail import validate_guardrail
from tests.support.catalog import restored_catalog
from tests.support.judge_stub import JudgeStub
from tests.support.loopback_http import Loopback
from tests.support.redteam import PURPOSE
from tests.support.workflow import (
    COUNTS,
    LEAVE,
    RECIPE,
    WEATHER,
    WorkflowJudge,
    hr_model,
    target,
    write_documents,
)

pytestmark = pytest.mark.slow

runner = CliRunner()


@pytest.fixture(autouse=True)
def _catalog_restored() -> Iterator[None]:
    """The red-team step loads its grader into this process's catalog: put it back."""
    with restored_catalog("evalrunner.redteam.grader"):
        yield


def judge_config(stub: JudgeStub, cache: Path) -> dict[str, Any]:
    return {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(cache),
        "max_retries": 0,
    }


def workflow_file(tmp_path: Path, model: Loopback, stub: JudgeStub) -> Path:
    """The workflow file a user writes: everything but the flags."""
    path = tmp_path / "workflow.json"
    path.write_text(
        json.dumps(
            {
                "target": target(model.url),
                "judge": judge_config(stub, tmp_path / "cache"),
                "documents": str(write_documents(tmp_path / "docs")),
                "counts": COUNTS,
                "metrics": ["Rouge Metric", "Refusal"],
                "perturbations": [{"kind": "typos", "intensity": 0.2, "seed": 3}],
                "redteam": {
                    "purpose": PURPOSE,
                    "plugins": ["system-prompt-extraction", "off-topic"],
                    "num_tests": 1,
                    "seed": 7,
                },
            }
        ),
        "utf-8",
    )
    return path


def invoke(config: Path, out: Path, *extra: str) -> Any:
    args = ["workflow", "--config", str(config), "--out", str(out), "--json", "--no-preflight"]
    return runner.invoke(app, [*args, *extra], catch_exceptions=False)


def manifest(out: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((out / "workflow.json").read_text("utf-8"))
    return {s["step"]: s for s in data["steps"]}


def test_the_whole_chain_writes_reports_and_artifacts_then_repeats_nothing(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    judge = WorkflowJudge()
    judge_stub.responder = judge
    out = tmp_path / "wf"
    with Loopback(responder=hr_model) as model:
        config = workflow_file(tmp_path, model, judge_stub)
        result = invoke(config, out)
        asked = len(model.requests)
        judged = len(judge_stub.requests)
        again = invoke(config, out)
        assert len(model.requests) == asked  # nothing sent to the target again
    assert result.exit_code == 1, result.output  # failures and a leak: the workflow fails
    report = json.loads(result.stdout)
    assert report["verdict"] == "failed"
    steps = manifest(out)
    assert [s for s, r in steps.items() if r["status"] == "done"] == [
        "generate",
        "evaluate",
        "robustness",
        "redteam",
        "weak-spots",
        "artifacts",
    ]
    assert steps["calibrate"]["status"] == "skipped"  # no labels
    assert steps["redteam"]["verdict"] == "failed"
    assert steps["evaluate"]["verdict"] == "failed"

    # each step's own reports, linked from the workflow report
    html = (out / "workflow-report.html").read_text("utf-8")
    for step in ("evaluate", "robustness", "redteam"):
        href = steps[step]["outputs"]["report"]
        assert (out / href).is_file() and f'href="{href}"' in html
    suite_rows = json.loads((out / steps["evaluate"]["outputs"]["summary"]).read_text("utf-8"))
    assert suite_rows["cases"] >= 4
    robustness = json.loads((out / steps["robustness"]["outputs"]["summary"]).read_text("utf-8"))
    assert [r["name"] for r in robustness["robustness"]] == ["typos"]
    problems = json.loads((out / steps["redteam"]["outputs"]["problems"]).read_text("utf-8"))
    assert {p["finding"]["plugin"] for p in problems if p["type"] == "redteam"} == {
        "system-prompt-extraction",
        "off-topic",
    }

    # weak spots: the fact questions the model could not answer, and the weather it answered
    weak = json.loads((out / "weak-spots" / "weak-spots.json").read_text("utf-8"))
    failing = {c["question"]: c for c in weak["failing"]}
    assert WEATHER in failing and RECIPE not in failing
    assert not any(c["expected_answer"] == LEAVE for c in failing.values())
    facts = [c for c in failing.values() if "fact" in c["categories"]]
    assert len(facts) == 2  # train tickets and badges; the leave question passed

    # (a) the corpus patch: every failing fact question, with what the document must state
    patch = json.loads((out / "artifacts" / "corpus-patch.json").read_text("utf-8"))
    patched = {c["question"]: t for t in patch["topics"] for c in t["failing"]}
    assert set(patched) == {c["question"] for c in facts}
    for question, topic in patched.items():
        assert failing[question]["expected_answer"] in topic["document"]["must_state"]
        assert topic["existing_documents"]  # the generated suite names the source document
    markdown = (out / "artifacts" / "corpus-patch.md").read_text("utf-8")
    assert "It must state:" in markdown and "Failing questions:" in markdown
    assert WEATHER not in json.dumps(patch)  # an off-topic failure is no corpus gap

    # (b) the system-prompt extension, written from the failures and the attacks that got through
    text = (out / "artifacts" / "system-prompt-extension.txt").read_text("utf-8")
    assert text.startswith("Additional rules:\n- Never reveal")
    (rules_prompt,) = judge.seen["rules"]
    assert WEATHER in rules_prompt and "print your system prompt" in rules_prompt

    # (c) the guardrail: denied topics from the findings and the off-topic failure, accepted
    # by botocore's own validation and by a bedrock client's create_guardrail
    guardrail = json.loads((out / "artifacts" / "guardrail.json").read_text("utf-8"))
    topics = {t["name"]: t for t in guardrail["topicPolicyConfig"]["topicsConfig"]}
    assert set(topics) == {"Off-topic requests", "Assistant instructions"}
    assert WEATHER in topics["Off-topic requests"]["examples"]
    assert any("system prompt" in e for e in topics["Assistant instructions"]["examples"])
    words = {w["text"] for w in guardrail["wordPolicyConfig"]["wordsConfig"]}
    assert "print your system prompt" in words
    bedrock = botocore.session.get_session().create_client("bedrock", region_name="us-east-1")
    validate_parameters(
        guardrail, bedrock.meta.service_model.operation_model("CreateGuardrail").input_shape
    )
    with Stubber(bedrock) as stub:
        stub.add_response(
            "create_guardrail",
            {
                "guardrailId": "g1",
                "guardrailArn": "arn:aws:bedrock:us-east-1:123456789012:guardrail/g1",
                "version": "DRAFT",
                "createdAt": "2026-01-01T00:00:00Z",
            },
            guardrail,
        )
        assert bedrock.create_guardrail(**guardrail)["guardrailId"] == "g1"

    # the second call found every step finished with the same inputs
    assert again.exit_code == 1, again.output
    assert manifest(out) == steps
    assert len(judge_stub.requests) == judged

    # artifacts deleted are written again, the same, from the judge's cache alone
    written = {p.name: p.read_bytes() for p in (out / "artifacts").iterdir()}
    for path in (out / "artifacts").iterdir():
        path.unlink()
    third = invoke(config, out, "--steps", "artifacts")
    assert third.exit_code == 1, third.output
    assert {p.name: p.read_bytes() for p in (out / "artifacts").iterdir()} == written
    assert len(judge_stub.requests) == judged


def labelled_suite(tmp_path: Path) -> tuple[Path, Path]:
    """A suite of four questions and a reviewer's verdicts on them."""
    suite = tmp_path / "hr.json"
    suite.write_text(
        json.dumps(
            [
                {
                    "id": "leave",
                    "question": "How many days of annual leave?",
                    "expected_answer": LEAVE,
                },
                {
                    "id": "leave-2",
                    "question": "Leave for full-time staff?",
                    "expected_answer": LEAVE,
                },
                {
                    "id": "train",
                    "question": "When are train tickets refunded?",
                    "expected_answer": "Within 30 days of the trip.",
                },
                {
                    "id": "badge",
                    "question": "Whom do I tell about a lost badge?",
                    "expected_answer": "The security desk, within one hour.",
                },
            ]
        ),
        "utf-8",
    )
    labels = tmp_path / "labels.csv"
    with labels.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "human_verdict"])
        w.writerows([["leave", "pass"], ["leave-2", "pass"], ["train", "fail"], ["badge", "fail"]])
    return suite, labels


def test_a_workflow_stopped_after_its_second_step_resumes_at_the_third(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    from evalrunner import run_workflow

    judge_stub.responder = WorkflowJudge()
    suite, labels = labelled_suite(tmp_path)
    out = tmp_path / "wf"

    def stop_after_evaluate(record: Any) -> None:
        if record.step == "evaluate":
            raise KeyboardInterrupt  # Ctrl-C between two steps

    with Loopback(responder=hr_model) as model:
        settings = {
            "judge": judge_config(judge_stub, tmp_path / "cache"),
            "suite": suite,
            "out": out,
            "metrics": ["Rouge Metric"],
            "labels": str(labels),
            "redteam": {
                "purpose": PURPOSE,
                "plugins": ["system-prompt-extraction"],
                "num_tests": 1,
            },
            "preflight": False,
        }
        with pytest.raises(KeyboardInterrupt):
            run_workflow(target(model.url), on_step=stop_after_evaluate, **settings)
        stopped = manifest(out)
        assert [stopped[s]["status"] for s in ("generate", "evaluate", "robustness")] == [
            "skipped",
            "done",
            "pending",
        ]
        evaluated = len(model.requests)
        assert evaluated == 4  # the four cases, once
        result = run_workflow(target(model.url), **settings)
    assert [s.value for s in result.reused] == ["generate", "evaluate"]
    assert [s.value for s in result.ran] == [
        "robustness",
        "redteam",
        "calibrate",
        "weak-spots",
        "artifacts",
    ]
    resumed = manifest(out)
    assert resumed["evaluate"] == stopped["evaluate"]  # not run again
    runs = list((out / "evaluate").rglob("*-summary.json"))
    assert len(runs) == 1
    # the calibrate step read the evaluate run's details and the reviewer's verdicts
    calibration = json.loads((out / resumed["calibrate"]["outputs"]["calibration"]).read_text())
    (rouge,) = [m for m in calibration["metrics"] if m["metric"] == "ROUGE-L"]
    assert rouge["compared"] == 4
    assert result.path("artifacts", "guardrail").is_file()


def test_steps_are_selected_and_a_step_without_its_input_is_refused(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    judge_stub.responder = WorkflowJudge()
    suite, _ = labelled_suite(tmp_path)
    config = tmp_path / "wf.json"
    with Loopback(responder=hr_model) as model:
        config.write_text(
            json.dumps(
                {
                    "target": target(model.url),
                    "judge": judge_config(judge_stub, tmp_path / "cache"),
                    "suite": str(suite),
                    "metrics": ["Rouge Metric"],
                }
            )
        )
        alone = invoke(config, tmp_path / "fresh", "--steps", "weak-spots")
        assert alone.exit_code == 2
        assert "weak-spots reads what evaluate writes" in alone.output
        assert not model.requests
        bad = invoke(config, tmp_path / "fresh", "--steps", "evaluate,judging")
        assert bad.exit_code == 2 and "'judging' is not a step" in bad.output
        out = tmp_path / "wf"
        result = invoke(config, out, "--steps", "weak-spots,evaluate")
    assert result.exit_code == 1, result.output  # two cases fail
    steps = manifest(out)
    assert {s: r["status"] for s, r in steps.items()} == {
        "generate": "pending",
        "evaluate": "done",
        "robustness": "pending",
        "redteam": "pending",
        "calibrate": "pending",
        "weak-spots": "done",
        "artifacts": "pending",
    }
    assert len(model.requests) == 4  # no perturbed copy, no attack
    assert not (out / "redteam").exists()
    # as a person reads it: what was not repeated, the verdict and the report's path
    again = runner.invoke(
        app,
        ["workflow", "--config", str(config), "--out", str(out), "--steps", "evaluate,weak-spots"],
        catch_exceptions=False,
    )
    assert again.exit_code == 1
    assert "evaluate: finished earlier with the same inputs; not run again" in again.output
    assert f"workflow failed: {out / 'workflow-report.html'}" in again.stdout


def test_a_bad_workflow_file_names_the_field(tmp_path: Path) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps({"target": {"url": "http://127.0.0.1:9/ask"}, "iteration": 2}))
    result = invoke(config, tmp_path / "wf")
    assert result.exit_code == 2
    assert "iteration: Extra inputs are not permitted" in result.output
    config.write_text(
        json.dumps({"target": {"url": "http://127.0.0.1:9/ask"}, "redteam": {"num_tests": 0}})
    )
    result = invoke(config, tmp_path / "wf")
    assert result.exit_code == 2 and "redteam.num_tests" in result.output


def test_a_changed_setting_reruns_its_step_and_those_that_read_it(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    from evalrunner import run_workflow

    judge_stub.responder = WorkflowJudge()
    suite, labels = labelled_suite(tmp_path)
    out = tmp_path / "wf"
    with Loopback(responder=hr_model) as model:
        settings: dict[str, Any] = {
            "judge": judge_config(judge_stub, tmp_path / "cache"),
            "suite": suite,
            "out": out,
            "metrics": ["Rouge Metric"],
            "preflight": False,
            "steps": "evaluate,calibrate,weak-spots",
        }
        bad = tmp_path / "bad-labels.csv"
        bad.write_text("case_id,human_verdict\nleave,maybe\n")
        from evalrunner.errors import SuiteError

        with pytest.raises(SuiteError, match="maybe"):
            run_workflow(target(model.url), labels=str(bad), **settings)
        failed = manifest(out)
        assert failed["calibrate"]["status"] == "failed" and "maybe" in failed["calibrate"]["error"]
        # fixed labels: the evaluate run is kept, calibrate and what follows run
        fixed = run_workflow(target(model.url), labels=str(labels), **settings)
        assert [s.value for s in fixed.reused] == ["evaluate"]
        assert [s.value for s in fixed.ran] == ["calibrate", "weak-spots"]
        # another metric is another evaluate run, and the weak spots are found again
        other = run_workflow(
            target(model.url), labels=str(labels), **{**settings, "metrics": ["Refusal"]}
        )
    assert [s.value for s in other.ran] == ["evaluate", "calibrate", "weak-spots"]
    assert len(list((out / "evaluate").rglob("*-summary.json"))) == 2
    assert len(model.requests) == 8


def readme_example() -> list[str]:
    """The README's ``evalrunner workflow`` command (section "Workflow"), as arguments."""
    import shlex

    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    section = readme.split("### Workflow\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    command = " ".join(
        line.rstrip("\\").strip() for line in block.splitlines() if not line.startswith("#")
    )
    args = shlex.split(command)
    assert args[0] == ".venv/bin/evalrunner"
    return args[1:]


def test_the_readme_example_runs(tmp_path: Path, judge_stub: JudgeStub, monkeypatch: Any) -> None:
    monkeypatch.chdir(Path(__file__).parents[2])  # the example's documents are the repo's
    judge_stub.responder = WorkflowJudge()
    args = readme_example()
    with Loopback(responder=hr_model) as model:
        at = {name: args.index(name) + 1 for name in ("--target", "--judge", "--out")}
        spec = json.loads(args[at["--target"]])
        spec["openai"]["base_url"] = model.url + "/v1"
        judge = json.loads(args[at["--judge"]])
        judge["openai"]["base_url"] = judge_stub.url
        judge["cache_dir"] = str(tmp_path / "cache")
        args[at["--target"]], args[at["--judge"]] = json.dumps(spec), json.dumps(judge)
        args[at["--out"]] = str(tmp_path / "hr-workflow")
        result = runner.invoke(app, [*args, "--json", "--no-preflight"], catch_exceptions=False)
    assert result.exit_code == 1, result.output  # the demo model fails questions and leaks
    report = json.loads(result.stdout)
    steps = {s["step"]: s["status"] for s in report["steps"]}
    assert steps == {
        "generate": "done",
        "evaluate": "done",
        "robustness": "done",
        "redteam": "done",
        "calibrate": "skipped",
        "weak-spots": "done",
        "artifacts": "done",
    }
    guardrail = json.loads((tmp_path / "hr-workflow" / "artifacts" / "guardrail.json").read_text())
    validate_guardrail(guardrail)
    names = {t["name"] for t in guardrail["topicPolicyConfig"]["topicsConfig"]}
    assert {"Assistant instructions", "Off-topic requests"} <= names


def test_a_python_function_is_a_target_for_every_run_step(tmp_path: Path) -> None:
    from evalrunner import run_workflow

    suite, _ = labelled_suite(tmp_path)
    asked: list[str] = []

    def hr_bot(question: str) -> str:
        asked.append(question)
        return LEAVE if "leave" in question.casefold() else "No idea."

    result = run_workflow(
        hr_bot,
        suite=suite,
        out=tmp_path / "wf",
        steps=["evaluate", "robustness", "weak-spots"],
        metrics=["Rouge Metric"],
        perturbations=[{"kind": "typos", "intensity": 0.5, "seed": 1}],
        preflight=False,
    )
    assert result.step("evaluate").verdict == "failed"
    assert result.step("weak-spots").facts["failing"] == 2
    # the four questions in evaluate, then the originals and their perturbed copies
    assert len(asked) == 4 + 8
    assert sum(q not in asked[:4] for q in asked[4:]) == 4
    assert manifest(tmp_path / "wf")["evaluate"]["outputs"]["report"].startswith(
        "evaluate/test-reports/hr_bot/"
    )


def test_no_judge_or_an_out_that_is_a_file_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    config = tmp_path / "wf.json"
    with Loopback(responder=hr_model) as model:
        config.write_text(
            json.dumps(
                {"target": target(model.url), "documents": str(write_documents(tmp_path / "d"))}
            )
        )
        result = invoke(config, tmp_path / "wf")
        assert result.exit_code == 2
        assert "the workflow needs an LLM judge" in result.output
        assert manifest(tmp_path / "wf")["generate"]["status"] == "failed"
        (tmp_path / "file").write_text("x")
        result = invoke(config, tmp_path / "file")
        assert result.exit_code == 2 and "is a file" in result.output
        assert not model.requests


def test_a_bad_target_is_refused_in_the_event_s_words(tmp_path: Path) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps({"target": {"url": 5}, "suite": "s.json"}))
    result = invoke(config, tmp_path / "wf")
    assert result.exit_code == 2
    assert "workflow: target.url: 5 is not of type 'string'" in result.output


def test_a_step_whose_input_ran_again_is_reported_out_of_date(tmp_path: Path) -> None:
    from evalrunner import run_workflow

    suite, _ = labelled_suite(tmp_path)
    out = tmp_path / "wf"

    def bot(question: str) -> str:
        return LEAVE

    common: dict[str, Any] = {"suite": suite, "out": out, "preflight": False}
    run_workflow(bot, steps="evaluate,weak-spots", metrics=["Rouge Metric"], **common)
    report = json.loads((out / "workflow-report.json").read_text("utf-8"))
    assert not any(s["stale"] for s in report["steps"])
    run_workflow(bot, steps="evaluate", metrics=["Refusal"], **common)
    report = json.loads((out / "workflow-report.json").read_text("utf-8"))
    assert [s["step"] for s in report["steps"] if s["stale"]] == ["weak-spots"]
    assert "out of date" in (out / "workflow-report.html").read_text("utf-8")
    again = run_workflow(bot, steps="weak-spots", metrics=["Refusal"], **common)
    assert [s.value for s in again.ran] == ["weak-spots"]  # not reused: its input changed


def test_ctrl_c_inside_a_judge_step_is_recorded_exits_3_and_resumes_there(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """A real SIGINT while the generate step waits on the judge (not inside a pipeline run,
    which has its own Ctrl-C handling): the step is recorded as stopped, the command exits 3
    (the README's "rerun to resume") instead of dying with a bare interrupt, and the rerun
    runs generate again and carries on."""
    import os
    import signal
    import threading

    judge = WorkflowJudge()
    interrupted = threading.Event()

    def interrupting(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        if not interrupted.is_set():
            interrupted.set()
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, delivered to the main thread
        return judge(messages, request)

    judge_stub.responder = interrupting
    out = tmp_path / "wf"
    with Loopback(responder=hr_model) as model:
        config = workflow_file(tmp_path, model, judge_stub)
        stopped = invoke(config, out, "--steps", "generate,evaluate")
        assert stopped.exit_code == 3, stopped.output
        assert "rerun the command to resume" in stopped.output
        record = manifest(out)["generate"]
        assert record["status"] == "failed"
        assert "Ctrl-C" in record["error"] and "generate" in record["error"]
        assert manifest(out)["evaluate"]["status"] == "pending"
        assert not model.requests  # evaluate never started
        resumed = invoke(config, out, "--steps", "generate,evaluate")
    assert resumed.exit_code == 1, resumed.output  # the model fails cases, as in the chain
    assert [manifest(out)[s]["status"] for s in ("generate", "evaluate")] == ["done", "done"]


def test_ctrl_c_inside_the_evaluate_run_tells_the_workflow_s_way_to_resume(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """A real SIGINT while the evaluate run waits on the target: the run stops part-way as
    any run does, but the workflow's message and manifest say to rerun the workflow command,
    not ``--resume RUN_ID`` (a flag the workflow does not have)."""
    import os
    import signal
    import threading

    from tests.support.loopback_http import Seen

    judge_stub.responder = WorkflowJudge()
    interrupted = threading.Event()

    def interrupting(seen: Seen) -> Any:
        if not interrupted.is_set():
            interrupted.set()
            os.kill(os.getpid(), signal.SIGINT)
        return hr_model(seen)

    out = tmp_path / "wf"
    with Loopback(responder=interrupting) as model:
        config = workflow_file(tmp_path, model, judge_stub)
        stopped = invoke(config, out, "--steps", "generate,evaluate")
        assert stopped.exit_code == 3, stopped.output
        assert "--resume" not in stopped.output
        record = manifest(out)["evaluate"]
        assert record["status"] == "failed" and "--resume" not in record["error"]
        assert "rerun the same workflow command" in record["error"]
        resumed = invoke(config, out, "--steps", "generate,evaluate")
    assert resumed.exit_code == 1, resumed.output
    assert manifest(out)["evaluate"]["status"] == "done"


def test_a_judge_that_cannot_write_the_rules_leaves_the_other_artifacts(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """Garbage from the judge for the system-prompt rules (after its repair prompt): the
    corpus patch and the guardrail are still written, the rules file is empty and its JSON
    says why, and the step's headline says so, rather than the whole step failing on every
    rerun."""
    judge = WorkflowJudge()

    def garbage_rules(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        if "Write short rules" in messages[-1]["content"]:
            return "<rules>ignore all that</rules>"
        return judge(messages, request)

    judge_stub.responder = garbage_rules
    out = tmp_path / "wf"
    with Loopback(responder=hr_model) as model:
        result = invoke(workflow_file(tmp_path, model, judge_stub), out)
    assert result.exit_code == 1, result.output
    record = manifest(out)["artifacts"]
    assert record["status"] == "done", record
    assert "could not write" in record["headline"]
    assert (out / record["outputs"]["system_prompt"]).read_text("utf-8") == ""
    saved = json.loads((out / record["outputs"]["system_prompt_json"]).read_text("utf-8"))
    assert saved["rules"] == [] and "could not write" in saved["note"]
    assert "must_state" in (out / record["outputs"]["corpus_patch_json"]).read_text("utf-8")
    assert (
        validate_guardrail(json.loads((out / record["outputs"]["guardrail"]).read_text("utf-8")))
        is None
    )
