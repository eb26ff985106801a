"""``evalrunner estimate`` of a project file: each (target × suite) cell estimated exactly as
``evalrunner estimate --suite FILE`` estimates that cell's event, and the total; the cells
picked and the file's values overridden by the same flags as ``evalrunner run``. Nothing is
called (the judge's URL is a closed port)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.cli.common import out

runner = CliRunner()
DEMO = Path(__file__).resolve().parents[3] / "test_suites"
JUDGE = {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"}}
TARGETS = {"prod": {"url": "http://127.0.0.1:9/prod"}, "staging": {"lambdaArn": "hr-staging"}}

FILE = """\
    metrics = ["Faithfulness", "Token F1"]

    [judge]
    openai = { base_url = "http://127.0.0.1:9/v1", model = "gpt-4o-mini" }

    [targets.prod]
    url = "http://127.0.0.1:9/prod"

    [targets.staging]
    lambdaArn = "hr-staging"

    [suites]
    full = "demo-hr.xlsx"
    smoke = "demo-hr-smoke.csv"
    """


def project(folder: Path, text: str = FILE) -> Path:
    for name in ("demo-hr.xlsx", "demo-hr-smoke.csv"):
        shutil.copy(DEMO / name, folder / name)
    path = folder / "evalrunner.toml"
    path.write_text(textwrap.dedent(text), "utf-8")
    return path


def as_json(args: list[str]) -> dict:
    result = runner.invoke(app, ["estimate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_each_cell_is_estimated_as_its_own_suite_would_be_and_added_up(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    matrix = as_json([])  # no arguments: the project file found in this folder
    assert [(c["target"], c["suite"]) for c in matrix["cells"]] == [
        ("prod", "full"),
        ("prod", "smoke"),
        ("staging", "full"),
        ("staging", "smoke"),
    ]
    for cell in matrix["cells"]:
        alone = as_json(
            [
                "--suite",
                "demo-hr.xlsx" if cell["suite"] == "full" else "demo-hr-smoke.csv",
                "--target",
                json.dumps({**TARGETS[cell["target"]], "name": cell["target"]}),
                "--metric",
                "Faithfulness",
                "--metric",
                "Token F1",
                "--judge",
                json.dumps(JUDGE),
            ]
        )
        assert cell["estimate"] == alone
    runs = [c["estimate"] for c in matrix["cells"]]
    total = matrix["total"]
    assert total["cells"] == 4
    assert total["items"] == sum(r["items"] for r in runs) == 2 * (27 + 3)
    assert total["judge_calls"] == sum(r["judge"]["calls"] for r in runs) > 0
    assert total["judge_input_tokens"] == sum(r["judge"]["input_tokens"] for r in runs)
    assert total["judge_cost"] == sum(r["judge"]["cost"] for r in runs) > 0
    assert total["aws_cost"] == sum(r["aws"]["total"] for r in runs)
    assert total["cost"] == total["judge_cost"] + total["aws_cost"]
    assert total["unpriced"] == []


def test_targets_and_suites_are_picked_and_flags_win_over_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    picked = as_json(["--target", "staging", "--suite", "smoke", "--suite", "full"])
    assert [(c["target"], c["suite"]) for c in picked["cells"]] == [
        ("staging", "full"),
        ("staging", "smoke"),
    ]
    flags = as_json(
        ["--target", "prod", "--suite", "smoke", "--iterations", "3", "--metric", "BLEU"]
    )
    (cell,) = flags["cells"]
    assert cell["estimate"]["items"] == 3 * 3
    assert cell["estimate"]["metrics"] == ["BLEU"]
    assert cell["estimate"]["judge"] is None  # --metric dropped the judged metric
    assert flags["total"]["judge_calls"] == 0


def test_the_table_shows_each_cell_and_the_total(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    result = runner.invoke(app, ["estimate"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[1:3] for line in lines if line.startswith("│ ")][:4] == [
        ["prod", "│"],
        ["prod", "│"],
        ["staging", "│"],
        ["staging", "│"],
    ]
    (total,) = [line for line in lines if "total" in line]
    matrix = as_json([])
    assert f"{matrix['total']['judge_calls']:,}" in total
    assert f"{matrix['total']['aws_cost']:,.4f}" in total
    assert f"Total: {matrix['total']['cost']:,.4f} USD" in result.output
    assert "Prices as of" in result.output


def test_a_judge_model_without_a_price_is_named_not_counted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path, FILE.replace("gpt-4o-mini", "my-own-llama"))
    matrix = as_json(["--suite", "full"])
    assert matrix["total"]["unpriced"] == ["prod × full", "staging × full"]
    assert matrix["total"]["judge_cost"] == 0
    result = runner.invoke(app, ["estimate", "--suite", "full"])
    assert "No price listed for the judge model of: prod × full, staging × full" in result.output


def test_a_bad_file_is_refused_at_its_line_and_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path, FILE.replace('"Token F1"]', '"Token F1"]\niterationz = 2'))
    result = runner.invoke(app, ["estimate"])
    assert result.exit_code == 2
    assert "evalrunner.toml:2: iterationz: unknown key" in result.output


def test_config_names_the_file_and_its_suite_names_are_names(tmp_path, monkeypatch):
    elsewhere = tmp_path / "ci"
    elsewhere.mkdir()
    path = project(elsewhere)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smoke").write_text("question\nA file named like the suite?\n")
    matrix = as_json(["--config", str(path), "--suite", "smoke"])
    assert [c["suite"] for c in matrix["cells"]] == ["smoke", "smoke"]


def test_what_a_project_estimate_cannot_take_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    monitor = runner.invoke(app, ["estimate", "--monitor-per-day", "1000"])
    assert monitor.exit_code == 2
    assert "--monitor-per-day" in monitor.output and "--suite FILE" in monitor.output
    two_files = runner.invoke(
        app, ["estimate", "--suite", "demo-hr.xlsx", "--suite", "demo-hr-smoke.csv"]
    )
    assert two_files.exit_code == 2
    assert "a suite file is run on its own" in two_files.output
    unknown = runner.invoke(app, ["estimate", "--suite", "nightly"])
    assert unknown.exit_code == 2
    assert "--suite 'nightly': not one of the suites of evalrunner.toml" in unknown.output


def test_the_readme_estimate_of_the_example_is_what_it_prints(tmp_path, monkeypatch):
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text("utf-8")
    section = readme.split("## Project file", 1)[1].split("\n## ", 1)[0]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    shown = section.split("$ evalrunner estimate --target hr-assistant\n", 1)[1].split("```")[0]
    (tmp_path / "test_suites").mkdir()
    project(tmp_path / "test_suites", "")
    (tmp_path / "evalrunner.toml").write_text(example, "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(out, "width", 100)  # the README's terminal
    result = runner.invoke(app, ["estimate", "--target", "hr-assistant"])
    assert result.exit_code == 0, result.output
    printed = [line.strip() for line in result.output.splitlines()]
    assert [line.strip() for line in shown.splitlines()] == printed[: len(shown.splitlines())]


def test_an_s3_suite_is_downloaded_to_be_estimated(tmp_path, monkeypatch):
    import boto3
    from moto import mock_aws

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.chdir(tmp_path)
    project(tmp_path, FILE.replace('"demo-hr-smoke.csv"', '"s3://team-suites/nightly/smoke.csv"'))
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="team-suites")
        body = (tmp_path / "demo-hr-smoke.csv").read_bytes()
        boto3.client("s3").put_object(Bucket="team-suites", Key="nightly/smoke.csv", Body=body)
        matrix = as_json(["--target", "prod", "--suite", "smoke"])
    (cell,) = matrix["cells"]
    assert (cell["suite"], cell["estimate"]["cases"]) == ("smoke", 3)
