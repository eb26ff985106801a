"""``evalrunner run`` with no arguments runs the project file: every target × suite cell,
each with its own report set, one matrix summary and one exit code, the worst cell's."""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.loopback_http import Loopback, Reply, Seen

pytestmark = pytest.mark.slow
runner = CliRunner()


def answers(seen: Seen) -> Reply:
    """prod knows the answers; staging answers every question wrongly."""
    question = seen.json()["question"]
    right = {"How many days?": "25 days", "VPN?": "Use the portal"}
    return Reply(body={"answer": right[question] if seen.path == "/prod" else "no idea"})


def write_project(folder: Path, url: str) -> Path:
    (folder / "suites").mkdir(parents=True, exist_ok=True)
    (folder / "suites" / "hr.csv").write_text("question,expected_answer\nHow many days?,25 days\n")
    (folder / "suites" / "it.csv").write_text("question,expected_answer\nVPN?,Use the portal\n")
    path = folder / "evalrunner.toml"
    path.write_text(
        textwrap.dedent(
            f"""\
            metrics = ["Token F1"]
            output = "reports"

            [targets.prod]
            url = "{url}/prod"

            [targets.staging]
            url = "{url}/staging"
            max_retries = 0

            [suites]
            hr = "suites/hr.csv"
            it = "suites/it.csv"

            [gates]
            fail_on = "failures"
            fail_under = {{ "Token F1" = 0.5 }}
            """
        ),
        "utf-8",
    )
    return path


def matrix(folder: Path) -> dict:
    return json.loads((folder / "reports" / "matrix.json").read_text("utf-8"))


def test_two_targets_by_two_suites_in_one_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        write_project(tmp_path, server.url)
        result = runner.invoke(app, ["run", "--quiet"])
    assert result.exit_code == 1, result.output  # staging fails its gate: the worst cell
    summary = matrix(tmp_path)
    cells = {(c["target"], c["suite"]): c for c in summary["cells"]}
    assert list(cells) == [("prod", "hr"), ("prod", "it"), ("staging", "hr"), ("staging", "it")]
    assert {k: c["headline"] for k, c in cells.items()} == {
        ("prod", "hr"): "PASSED",
        ("prod", "it"): "PASSED",
        ("staging", "hr"): "FAILED",
        ("staging", "it"): "FAILED",
    }
    assert summary["exit_code"] == 1
    staging = cells[("staging", "it")]
    assert staging["metrics"][0]["metric"] == "Token F1" and staging["metrics"][0]["pass_rate"] == 0
    assert staging["gates"][0]["passed"] is False
    for (target, suite), c in cells.items():  # each cell its own normal report set
        folder = tmp_path / "reports" / target / suite
        (run_summary,) = folder.rglob("*-summary.json")
        assert json.loads(run_summary.read_text())["suite"] == f"test-suites/{suite}.csv"
        assert (tmp_path / "reports" / c["report"]).is_file()
        assert c["report"].startswith(f"{target}/{suite}/test-reports/{target}/")
    page = (tmp_path / "reports" / "matrix.html").read_text("utf-8")
    assert page.count('<section class="cell">') == 4
    assert "matrix exit code 1" in result.stdout
    # one pre-flight per target, then one call per case of each cell
    assert len(server.requests) == 2 + 4


def test_flags_override_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        write_project(tmp_path, server.url)  # its gates say fail_on = "failures"
        result = runner.invoke(
            app,
            [
                "run",
                "--quiet",
                "--target",
                "staging",
                "--suite",
                "it",
                "--fail-on",
                "never",
                "--iterations",
                "2",
                "--out",
                "picked",
                "--no-preflight",
            ],
        )
        assert result.exit_code == 0, result.output  # --fail-on never wins over the gate
        assert len(server.requests) == 2  # one cell, two iterations, no pre-flight
    summary = json.loads((tmp_path / "picked" / "matrix.json").read_text("utf-8"))
    (cell,) = summary["cells"]
    assert (cell["target"], cell["suite"], cell["headline"]) == ("staging", "it", "PASSED")
    (run_summary,) = (tmp_path / "picked" / "staging" / "it").rglob("*-summary.json")
    assert json.loads(run_summary.read_text())["iterations"] == 2


def test_several_suites_are_picked_by_name_and_a_suite_file_still_runs_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        path = write_project(tmp_path, server.url)
        text = path.read_text("utf-8")
        path.write_text(
            text.replace('it = "suites/it.csv"', 'it = "suites/it.csv"\nagain = "suites/hr.csv"')
        )
        picked = ["run", "--quiet", "--no-preflight", "--fail-on", "never", "--target", "prod"]
        result = runner.invoke(app, [*picked, "--suite", "again", "--suite", "it"])
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 2  # two cells of the six, one case each
        cells = [(c["target"], c["suite"]) for c in matrix(tmp_path)["cells"]]
        assert cells == [("prod", "it"), ("prod", "again")]  # in the file's order
        mixed = runner.invoke(app, [*picked, "--suite", "suites/hr.csv", "--suite", "it"])
        assert mixed.exit_code == 2
        assert "--suite suites/hr.csv: a suite file is run on its own" in mixed.stderr
        alone = runner.invoke(
            app,
            [
                "run",
                "--quiet",
                "--no-preflight",
                "--fail-on",
                "never",
                "--suite",
                "suites/hr.csv",
                "--target",
                json.dumps({"url": f"{server.url}/prod"}),
                "--out",
                "alone",
            ],
        )
        assert alone.exit_code == 0, alone.output
        assert len(server.requests) == 3  # the suite file's one case: no project file read
    assert list((tmp_path / "alone").rglob("*-summary.json"))
    assert not (tmp_path / "alone" / "matrix.json").exists()
    helped = runner.invoke(app, ["run", "--help"])
    words = " ".join(w for w in helped.output.split() if w != "│")  # the help box's edges
    assert "A value naming an existing file is a suite file and no project file is read" in words


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_exit_code_is_the_worst_cells(tmp_path, monkeypatch):
    # prod passes (0), staging is down once the run is under way: not measured (4)
    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        path = write_project(tmp_path, server.url)
        dead = f"http://127.0.0.1:{closed_port()}"
        path.write_text(path.read_text().replace(f"{server.url}/staging", dead), "utf-8")
        result = runner.invoke(app, ["run", "--quiet", "--suite", "hr", "--no-preflight"])
    assert result.exit_code == 4, result.output
    assert [c["exit_code"] for c in matrix(tmp_path)["cells"]] == [0, 4]


def test_a_yaml_project_is_found_from_a_subfolder_of_the_repository(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "services" / "hr").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "services" / "hr")
    with Loopback(responder=answers) as server:
        write_project(tmp_path, server.url)
        toml = tmp_path / "evalrunner.toml"
        toml.unlink()
        (tmp_path / "evalrunner.yaml").write_text(
            textwrap.dedent(
                f"""\
                # yaml-language-server: $schema=./evalrunner.schema.json
                targets:
                  prod: {{url: "{server.url}/prod"}}
                suites:
                  hr: suites/hr.csv
                metrics: [Token F1]
                output: reports
                """
            ),
            "utf-8",
        )
        result = runner.invoke(app, ["run", "--quiet"])
    assert result.exit_code == 0, result.output
    assert [c["headline"] for c in matrix(tmp_path)["cells"]] == [
        "PASSED"
    ]  # output: the file's folder


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "evalrunner.toml",
            'metrics = ["Token F1"]\n[targets.prod]\nurl = "URL"\ntimeout_seconds = "soon"\n'
            '[suites]\nhr = "hr.csv"\n',
            "evalrunner.toml:4: targets.prod.timeout_seconds: ",
        ),
        (
            "evalrunner.yaml",
            'metrics: [Token F1]\ntargets:\n  prod:\n    url: "URL"\nsuites:\n  hr: hr.csv\n'
            "gates:\n  fail_under: {Token F1: 0.5}\n  max_error_shares: 0.2\n",
            "evalrunner.yaml:9: gates.max_error_shares: unknown key; valid keys here: fail_on,",
        ),
    ],
)
def test_a_bad_file_is_refused_before_any_call(tmp_path, monkeypatch, name, text, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hr.csv").write_text("question,expected_answer\nHow many days?,25 days\n")
    with Loopback(responder=answers) as server:
        (tmp_path / name).write_text(text.replace("URL", server.url), "utf-8")
        result = runner.invoke(app, ["run", "--quiet"])
        assert result.exit_code == 2, result.output
        assert f"error: {expected}" in " ".join(result.stderr.split()), result.stderr
        assert server.requests == []
    assert not (tmp_path / "evalrunner-out").exists()


def test_no_suite_and_no_project_file_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run"])
    assert result.exit_code == 2
    assert "give --suite FILE (and --target), or write a project file" in result.stderr


def readme_example() -> str:
    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    section = readme.split("## Project file", 1)[1]
    return section.split("```toml\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_runs_as_written(tmp_path, monkeypatch):
    repo = Path(__file__).parents[2]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "test_suites").mkdir()
    for name in ("demo-hr.xlsx", "demo-hr-smoke.csv"):
        (tmp_path / "test_suites" / name).write_bytes((repo / "test_suites" / name).read_bytes())
    (tmp_path / "evalrunner.toml").write_text(readme_example(), "utf-8")
    result = runner.invoke(app, ["run", "--quiet"])
    assert result.exit_code in (0, 1), result.output  # it ran: a verdict, not an error
    summary = json.loads((tmp_path / "reports" / "matrix.json").read_text("utf-8"))
    assert len(summary["cells"]) == 4
    assert summary["exit_code"] == max(c["exit_code"] for c in summary["cells"])


def test_validate_checks_a_project_file_without_running_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        path = write_project(tmp_path, server.url)
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exit_code == 0, result.output
        assert "valid: evalrunner.toml, 4 cells (2 targets × 2 suites)" in result.stdout
        path.write_text(path.read_text().replace('"Token F1" = 0.5', '"Token F2" = 0.5'))
        bad = runner.invoke(app, ["validate", str(path)])
        assert bad.exit_code == 2
        assert 'evalrunner.toml:17: gates.fail_under."Token F2": not a metric of this run' in (
            " ".join(bad.stderr.split())
        )
        assert server.requests == []
    assert not (tmp_path / "reports").exists()


def test_a_cell_whose_run_fails_is_exit_3_and_the_matrix_goes_on(tmp_path, monkeypatch):
    # prod answers after 3 s: its task runs past a 1 s function limit and the run is stopped
    # as Lambda would stop it (partial, exit 3); the staging cell after it still runs
    def slow_prod(seen: Seen) -> Reply:
        reply = answers(seen)
        reply.delay = 3.0 if seen.path == "/prod" else 0.0
        return reply

    monkeypatch.chdir(tmp_path)
    with Loopback(responder=slow_prod) as server:
        write_project(tmp_path, server.url)
        result = runner.invoke(
            app,
            ["run", "--quiet", "--suite", "hr", "--no-preflight", "--function-timeout", "1"],
        )
    assert result.exit_code == 3, result.output
    cells = matrix(tmp_path)["cells"]
    assert [(c["target"], c["exit_code"]) for c in cells] == [("prod", 3), ("staging", 1)]
    assert cells[0]["headline"] == "PARTIAL" and cells[1]["headline"] == "FAILED"
    assert "function limit" in result.stderr


def test_the_python_api_runs_the_project_as_the_cli_does(tmp_path, monkeypatch):
    import evalrunner
    from evalrunner.project.source import ProjectError

    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        write_project(tmp_path, server.url)
        done = evalrunner.run_project(suite="hr", preflight=False)  # found from this folder
        assert (done.exit_code, done.passed) == (1, False)
        assert list(done.runs) == ["prod × hr", "staging × hr"]
        assert done.runs["prod × hr"].passed and not done.runs["staging × hr"].passed
        assert done.runs["staging × hr"].metric("Token F1") == 0
        # keywords win over the file, as flags do
        lenient = evalrunner.run_project(
            tmp_path / "evalrunner.toml",
            targets=["staging"],
            suite="hr",
            fail_on="never",
            out=tmp_path / "api",
            preflight=False,
        )
        assert lenient.passed and list(lenient.runs) == ["staging × hr"]
        assert (tmp_path / "api" / "matrix.json").is_file()
        both = evalrunner.run_project(suite=["it", "hr"], targets=["prod"], preflight=False)
        assert list(both.runs) == ["prod × hr", "prod × it"]  # several names, the file's order
        with pytest.raises(ProjectError, match=r"not one of the targets of evalrunner\.toml"):
            evalrunner.run_project(targets=["nope"])


def test_ctrl_c_between_two_cells_still_writes_the_matrix(tmp_path, monkeypatch):
    """Ctrl-C after one cell finished and before the next cell's run took over the signals
    ended the process with exit 130 and no matrix: the finished cell was in no summary."""
    import os
    import signal

    from evalrunner.launch import run_local
    from evalrunner.project.cells import Overrides
    from evalrunner.project.run import run_cells

    def execute(event, suite, out_dir, resume):
        if "staging" in str(out_dir):  # Ctrl-C as the second cell starts
            os.kill(os.getpid(), signal.SIGINT)
        return run_local(event, suite, out_dir, preflight=False)

    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        path = write_project(tmp_path, server.url)
        done = run_cells(path, Overrides(suites=["hr"]), execute, preflight=False)
    assert [c.target for c in done.matrix.cells] == ["prod"]
    assert done.matrix.not_run == ["staging × hr"]
    assert done.matrix.stopped_reason == "interrupted (Ctrl-C)"
    assert done.matrix.exit_code == 3  # not every cell ran: never a pass
    summary = matrix(tmp_path)
    assert summary["not_run"] == ["staging × hr"] and summary["exit_code"] == 3
    assert "interrupted (Ctrl-C)" in (tmp_path / "reports" / "matrix.html").read_text("utf-8")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_an_output_that_is_a_file_is_named_at_its_key_not_as_a_flag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Loopback(responder=answers) as server:
        path = write_project(tmp_path, server.url)  # output = "reports" on its line 2
        (tmp_path / "reports").write_text("not a folder")
        result = runner.invoke(app, ["run", "--quiet"])
        flag = runner.invoke(app, ["run", "--quiet", "--out", str(path)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("error: evalrunner.toml:2: output: ")
    assert "is a file; give a folder" in message and "--out" not in message
    assert server.requests == []
    assert flag.exit_code == 2 and "--out: " in " ".join(flag.stderr.split())
