"""Metrics in the user's own code (issue 32 items 1 and 3): ``--plugin`` on a file and on a
module, the ``evalrunner.evaluators`` entry point group, ``evaluate(metrics=[...])`` with
objects, names and functions mixed; a raising metric errs on its case only, a clash with a
built-in name and a module that does not import are bad input (exit 2)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from evalrunner.errors import PluginError
from evalrunner.evaluators import registry
from evalrunner.evaluators.judge_rag.evaluators import Faithfulness
from tests.support.catalog import restored_catalog
from tests.support.loopback_http import Loopback, Reply

from .conftest import read_csv

README = Path(__file__).resolve().parents[2] / "README.md"

PLUGIN = '''
import evalrunner


@evalrunner.metric(name="{name}", threshold=0.5)
def says_days(sample):
    """Whether the answer speaks of days."""
    if "Boom" in sample.question:
        raise ValueError("metric blew up on purpose")
    if "sick" in sample.question:
        return evalrunner.Scored(0.0, "not the sick-leave answer")
    return 1.0 if "days" in (sample.answer or "") else 0.0
'''


@pytest.fixture(autouse=True)
def catalog_restored() -> Iterator[None]:
    """The plugins a test registers leave the process's catalog as it was."""
    with restored_catalog("_evalrunner_plugin_", "pluginmod_", "epmetrics_"):
        yield


@pytest.fixture
def server() -> Iterator[Loopback]:
    with Loopback() as loopback:
        loopback.always(200, {"answer": "25 days"})
        yield loopback


def suite(tmp_path: Path) -> Path:
    path = tmp_path / "s.csv"
    path.write_text(
        "question,expected_answer\nHow many days?,25 days\nAnd sick?,10\nBoom?,x\n", "utf-8"
    )
    return path


def run(tmp_path: Path, server: Loopback, *extra: str):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            str(suite(tmp_path)),
            "--target",
            json.dumps({"url": server.url}),
            "--out",
            str(out),
            "--quiet",
            "--json",
            "--no-preflight",
            *extra,
        ],
    )
    return result, out


def reports(out: Path, summary: dict) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    return read_csv(out / summary["reports"]["details"]), read_csv(
        out / summary["reports"]["result"]
    )


def test_a_plugin_file_scores_gates_and_a_raising_case_errs_alone(tmp_path, server):
    plugin = tmp_path / "my_metrics.py"
    plugin.write_text(PLUGIN.format(name="Says days"), "utf-8")

    result, out = run(
        tmp_path, server, "--plugin", str(plugin), "--metric", "Says days", "--max-error-share", "1"
    )

    # the sick-leave case is below the plugin's threshold: the run fails like a built-in's
    assert result.exit_code == 1, result.output
    summary = json.loads(result.output)
    below = {b["metric"]: b for b in summary["verdict"]["below_threshold"]}
    assert below["Says days"]["threshold"] == 0.5 and below["Says days"]["failed"] == 1
    details, results = reports(out, summary)
    by_question = {row["question"]: row for row in details}
    assert [r["status"] for r in details] == ["ok", "ok", "ok"]  # no case lost
    days, sick, boom = (by_question[q] for q in ("How many days?", "And sick?", "Boom?"))
    assert (days["Says days score"], days["Says days success"]) == ("1.0000", "true")
    assert (sick["Says days score"], sick["Says days success"]) == ("0.0000", "false")
    assert sick["Says days reason"] == "not the sick-leave answer"
    assert boom["Says days score"] == ""
    assert "ValueError: metric blew up on purpose" in boom["Says days reason"]
    row = next(r for r in results if r["Metric"] == "Says days" and r["Iteration"] == "all")
    assert (row["Threshold"], row["Errored"], row["Count"]) == ("0.5000", "1", "2")


def test_a_plugin_module_by_name_runs_beside_the_default_metrics(tmp_path, server, monkeypatch):
    (tmp_path / "pluginmod_days.py").write_text(PLUGIN.format(name="Days said"), "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))

    lenient = ("--fail-on", "errors", "--max-error-share", "1")
    result, out = run(tmp_path, server, "--plugin", "pluginmod_days", *lenient)

    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    metrics = [m["metric"] for m in summary["metrics"]]
    assert "Days said" in metrics and "ROUGE-L" in metrics
    _, results = reports(out, summary)
    assert {"Days said", "ROUGE-L"} <= {r["Metric"] for r in results}


@pytest.mark.parametrize("taken", ["ROUGE-L", "Faithfulness", "token f1"])
def test_a_metric_named_like_a_built_in_is_refused(tmp_path, server, taken):
    plugin = tmp_path / "clash.py"
    plugin.write_text(PLUGIN.format(name=taken), "utf-8")

    result, out = run(tmp_path, server, "--plugin", str(plugin))

    assert result.exit_code == 2, result.output
    assert "already taken by the built-in evaluator" in result.output
    assert taken in result.output and not out.exists()
    assert server.requests == []


def test_a_plugin_that_does_not_import_is_bad_input_naming_it(tmp_path, server):
    plugin = tmp_path / "broken_metrics.py"
    plugin.write_text("raise RuntimeError('no settings file here')\n", "utf-8")

    result, _ = run(tmp_path, server, "--plugin", str(plugin))
    missing, _ = run(tmp_path, server, "--plugin", "pluginmod_not_installed")

    assert result.exit_code == 2, result.output
    assert "broken_metrics.py" in result.output
    assert "RuntimeError: no settings file here" in result.output
    assert missing.exit_code == 2, missing.output
    assert "pluginmod_not_installed" in missing.output and "ModuleNotFoundError" in missing.output
    assert server.requests == []


def test_an_installed_packages_entry_point_offers_its_metrics(tmp_path, server, monkeypatch):
    (tmp_path / "epmetrics_words.py").write_text(PLUGIN.format(name="Entry days"), "utf-8")
    info = tmp_path / "epmetrics-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: epmetrics\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evalrunner.evaluators]\nwords = epmetrics_words\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)  # as in a fresh process

    assert "Entry days" in registry.available()
    result, out = run(tmp_path, server, "--metric", "Entry days", "--max-error-share", "1")

    assert result.exit_code == 1, result.output  # the sick-leave case fails it
    _, results = reports(out, json.loads(result.output))
    assert any(r["Metric"] == "Entry days" and r["Threshold"] == "0.5000" for r in results)


def test_evaluate_takes_objects_names_and_functions_mixed(tmp_path, server):
    @evalrunner.metric(name="Short answer", threshold=0.5, higher_is_better=False)
    def short_answer(sample: evalrunner.Sample) -> float:
        return len((sample.answer or "").split()) / 10

    run = evalrunner.evaluate(
        suite(tmp_path),
        {"url": server.url},
        metrics=[Faithfulness(threshold=0.8), "Rouge Metric", short_answer],
        out=tmp_path / "out",
        preflight=False,
    )

    results = run.results.set_index(["Metric", "Iteration"])
    assert results.loc[("Faithfulness", "all"), "Threshold"] == 0.8  # the object's setting
    assert results.loc[("ROUGE-L", "all"), "Threshold"] == 0.75  # the name's default
    short = results.loc[("Short answer", "all")]
    assert (short["Threshold"], short["Pass rate"]) == (0.5, 1.0)
    assert short["Average Score"] == pytest.approx(0.2)
    assert bool(short["Higher is better"]) is False
    assert short_answer(evalrunner.Sample(question="q", answer="a b c")) == pytest.approx(0.3)


def test_a_plugin_metric_that_clashes_is_refused_in_python_too():
    with pytest.raises(PluginError, match="already taken by the built-in evaluator 'BLEU'"):

        @evalrunner.metric(name="BLEU-2")
        def bleu_two(sample: evalrunner.Sample) -> float:
            return 1.0


def readme_block(marker: str, language: str) -> str:
    text = README.read_text("utf-8")
    block = re.search(rf"<!-- {marker} -->\n```{language}\n(.*?)```", text, re.S)
    assert block is not None, f"the README's {marker} block is missing"
    return block.group(1)


#: The README's target URL, which the tests point at the loopback server instead.
README_URL = "http://localhost:8080/ask"
README_SUITE = (
    "question,expected_answer\nHow many days of leave?,25 days\nWho approves?,Your manager\n"
)


def test_the_readmes_metric_is_ten_lines_and_runs_as_the_readme_runs_it(
    tmp_path, server, monkeypatch
):
    code = readme_block("plugin-example", "python")
    assert len(code.strip().splitlines()) <= 10
    command = readme_block("plugin-run", "bash").strip()
    monkeypatch.chdir(tmp_path)  # the README's relative names: hr.csv, my_metrics.py
    (tmp_path / "my_metrics.py").write_text(code, "utf-8")
    (tmp_path / "hr.csv").write_text(README_SUITE, "utf-8")
    server.responder = lambda seen: Reply(
        body={"answer": "25 days" if b"days" in seen.body else "Ask HR"}
    )
    args = shlex.split(command.replace(README_URL, server.url))
    assert args[:2] == ["evalrunner", "run"]

    result = CliRunner().invoke(app, [*args[1:], "--json"])

    summary = json.loads(result.stdout)
    assert result.exit_code == summary["verdict"]["exit_code"], result.output
    details, results = reports(tmp_path / "evalrunner-out", summary)  # the default --out
    scored = {row["question"]: row for row in details}
    assert scored["How many days of leave?"]["Gives a number score"] == "1.0000"
    assert scored["Who approves?"]["Gives a number score"] == "0.0000"
    assert scored["Who approves?"]["Gives a number reason"] == "no figure in the answer"
    rows = {r["name"] for r in results}
    assert "Gives a number" in rows and "Rouge Metric" in rows  # beside the default selection


def test_the_readmes_python_example_runs_as_written(tmp_path, server, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # `from my_metrics import ...`, as in the README
    (tmp_path / "my_metrics.py").write_text(readme_block("plugin-example", "python"), "utf-8")
    (tmp_path / "hr.csv").write_text(README_SUITE, "utf-8")
    server.always(200, {"answer": "You get 25 days."})
    code = readme_block("plugin-python", "python").replace(README_URL, server.url)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # the README's own example

    results = scope["run"].results.set_index(["Metric", "Iteration"])
    assert results.loc[("Gives a number", "all"), "Average Score"] == 1.0
    assert results.loc[("Faithfulness", "all"), "Threshold"] == 0.8
    assert results.loc[("Faithfulness", "all"), "Skipped"] == 2  # no judge in this run
    assert ("ROUGE-L", "all") in results.index


def test_evaluate_takes_plugins_as_the_cli_does(tmp_path, server):
    plugin = tmp_path / "api_metrics.py"
    plugin.write_text(PLUGIN.format(name="Api days"), "utf-8")

    run = evalrunner.evaluate(
        suite(tmp_path),
        {"url": server.url},
        plugins=[str(plugin)],
        out=tmp_path / "out",
        preflight=False,
        fail_on="never",
    )

    results = run.results.set_index(["Metric", "Iteration"])
    days = results.loc[("Api days", "all")]
    assert (days["Count"], days["Errored"]) == (2, 1)
    assert days["Pass rate"] == pytest.approx(1 / 3)  # of the three cases, as for a built-in
    assert ("ROUGE-L", "all") in results.index  # beside the default selection


def test_evalrunner_metrics_lists_a_plugins_metrics_after_the_built_in_ones(tmp_path):
    plugin = tmp_path / "listed.py"
    plugin.write_text(PLUGIN.format(name="Listed days"), "utf-8")
    runner = CliRunner()

    listed = runner.invoke(app, ["metrics", "--plugin", str(plugin)], terminal_width=200)
    broken = runner.invoke(app, ["metrics", "--plugin", str(tmp_path / "absent.py")])

    assert listed.exit_code == 0, listed.output
    names = [line.split("│")[1].strip() for line in listed.output.splitlines() if "│" in line]
    assert "Listed days" in names and names.index("Listed days") > names.index("Token F1")
    assert broken.exit_code == 2 and "absent.py" in broken.output
