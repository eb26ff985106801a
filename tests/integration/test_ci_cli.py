"""--junit-xml and --markdown as CI uses them: written after the run, the Markdown also to
$GITHUB_STEP_SUMMARY, and a bad path refused before anything runs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from typer.testing import CliRunner

from evalrunner.cli import app

XSD = Path(__file__).parents[1] / "data" / "junit-10.xsd"
runner = CliRunner()


@pytest.mark.slow
def test_demo_writes_junit_markdown_and_the_step_summary(tmp_path, monkeypatch):
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    junit, markdown = tmp_path / "ci" / "junit.xml", tmp_path / "ci" / "summary.md"
    result = runner.invoke(
        app,
        [
            "demo",
            "--out",
            str(tmp_path / "out"),
            "--metric",
            "Rouge Metric",
            "--junit-xml",
            str(junit),
            "--markdown",
            str(markdown),
        ],
    )
    # cases fail ROUGE-L's threshold: the default policy fails the run, and every CI file
    # says so (before, JUnit listed the failures while the Markdown said PASSED, exit 0)
    assert result.exit_code == 1, result.output
    assert f"CI report: {junit}" in result.output.replace("\n", "")

    xmlschema.XMLSchema(XSD).validate(str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    names = [c.get("name") for c in suite.iter("testcase")]
    assert len(names) == 28 and all(n.endswith(" · ROUGE-L") for n in names[:-1])
    assert names[-1] == "run verdict"
    failures = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failures and suite.get("failures") == str(len(failures))
    *case_failures, verdict = failures
    assert all("needs >= 0.75" in f.find("failure").get("message") for f in case_failures)
    assert verdict.get("name") == "run verdict"
    assert verdict.find("failure").get("message").startswith("FAILED: ROUGE-L: ")

    text = markdown.read_text(encoding="utf-8")
    assert text.startswith("## evalrunner: ❌ FAILED: evalrunner-demo-hr on test-suites/demo-hr")
    assert "| ROUGE-L |" in text
    assert step_summary.read_text(encoding="utf-8") == "earlier step\n" + text + "\n"


@pytest.mark.parametrize("option", ["--junit-xml", "--markdown"])
def test_a_folder_as_report_file_exits_2_before_running(tmp_path, monkeypatch, option):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = tmp_path / "out"
    result = runner.invoke(app, ["demo", "--out", str(out), option, str(tmp_path)])
    assert result.exit_code == 2
    assert "is a folder; give a file name" in result.output
    assert not out.exists()
