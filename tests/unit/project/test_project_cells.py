"""A project file as its cells: each cell's event as the event's own model reads it, the
flags over the file, and every problem named by file, line and key (or by its flag)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalrunner.event import read_event
from evalrunner.project.cells import Overrides, load_project
from evalrunner.project.source import ProjectError
from evalrunner.run_defaults import RunDefaults

NONE = RunDefaults()  # no operator default judge, metrics or profile


def project(tmp_path: Path, text: str, name: str = "evalrunner.toml") -> Path:
    (tmp_path / "hr.csv").write_text("question,expected_answer\nHow many days?,25 days\n")
    (tmp_path / "it.csv").write_text("question,expected_answer\nVPN?,Use the portal\n")
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), "utf-8")
    return path


FILE = """\
    iterations = 2
    max_concurrency = 4
    output = "reports"

    [targets.prod]
    url = "http://127.0.0.1:9/ask"

    [targets.staging]
    url = "http://127.0.0.1:9/ask"
    name = "staging-eu"

    [suites]
    hr = "hr.csv"
    it = "it.csv"

    [metrics]
    "Token F1" = { threshold = 0.6 }
    "Rouge Metric" = {}
    "JSON schema" = { options = { schema = { type = "object" } } }

    [gates]
    fail_on = "regressions"
    fail_under = { "Token F1" = 0.5 }
    thresholds = { "ROUGE-L" = 0.3 }
    """


def errors(path: Path, overrides: Overrides | None = None) -> list[str]:
    with pytest.raises(ProjectError) as caught:
        load_project(path, overrides, NONE)
    return caught.value.message.splitlines()


def test_every_target_times_every_suite_is_a_cell_whose_event_is_an_event(tmp_path):
    loaded = load_project(project(tmp_path, FILE), defaults=NONE)
    assert [c.label for c in loaded.cells] == [
        "prod × hr",
        "prod × it",
        "staging × hr",
        "staging × it",
    ]
    cell = loaded.cells[0]
    assert cell.suite_path == tmp_path / "hr.csv"
    assert cell.out_dir == tmp_path / "reports" / "prod" / "hr"
    assert cell.event["target"] == {"url": "http://127.0.0.1:9/ask", "name": "prod"}
    assert loaded.cells[2].event["target"]["name"] == "staging-eu"  # its own name stays
    assert cell.event["metrics"] == ["Token F1", "Rouge Metric", "JSON schema"]
    assert cell.event["thresholds"] == {"Token F1": 0.6, "ROUGE-L": 0.3}
    assert cell.event["evaluator_options"] == {"JSON schema": {"schema": {"type": "object"}}}
    assert cell.event["fail_under"] == {"Token F1": 0.5}
    assert (cell.event["iterations"], cell.event["max_concurrency"]) == (2, 4)
    spec = read_event(cell.event, defaults=NONE)  # what start and Prepare would read
    assert spec.fail_on == "regressions" and spec.key == "test-suites/hr.csv"


def test_flags_win_over_the_file(tmp_path):
    flags = Overrides(
        event={
            "iterations": 3,
            "fail_on": "never",
            "thresholds": {"Token F1": 0.9},
            "metrics": ["Token F1", "Rouge Metric"],
        },
        targets=["staging"],
        suites=["it"],
        output=tmp_path / "elsewhere",
    )
    loaded = load_project(project(tmp_path, FILE), flags, NONE)
    (cell,) = loaded.cells
    assert cell.label == "staging × it"
    assert cell.out_dir == tmp_path / "elsewhere" / "staging" / "it"
    assert cell.event["iterations"] == 3 and cell.event["fail_on"] == "never"
    # --threshold merges name by name; --metric chose the evaluators, so the file's options
    # for one not chosen are not sent
    assert cell.event["thresholds"] == {"Token F1": 0.9, "ROUGE-L": 0.3}
    assert cell.event["metrics"] == ["Token F1", "Rouge Metric"]
    assert "evaluator_options" not in cell.event


def test_an_unknown_key_is_refused_with_the_valid_ones(tmp_path):
    path = project(tmp_path, FILE.replace('fail_on = "regressions"', 'fail_onn = "never"'))
    (line,) = errors(path)
    assert line.startswith("evalrunner.toml:22: gates.fail_onn: unknown key; valid keys here: ")
    assert "fail_on, fail_on_regression, fail_under, thresholds" in line
    top = project(tmp_path, "colour = 1\n" + textwrap.dedent(FILE))
    (line,) = errors(top)
    assert line.startswith("evalrunner.toml:1: colour: unknown key; valid keys here: targets,")


def test_a_target_field_error_names_its_line_and_key(tmp_path):
    path = project(tmp_path, FILE.replace('name = "staging-eu"', "timeout_seconds = -1"))
    (line,) = errors(path)
    assert line.startswith("evalrunner.toml:10: targets.staging.timeout_seconds: ")
    assert "greater than 0" in line
    typo = project(tmp_path, FILE.replace('name = "staging-eu"', "urll = 1"))
    (line,) = errors(typo)
    assert line.startswith("evalrunner.toml:10: targets.staging.urll: unknown key")
    assert "timeout_seconds" in line and "headers_from_env" in line  # the kind's own keys


def test_the_events_rules_are_located_in_the_file(tmp_path):
    text = FILE.replace('"Rouge Metric" = {}', '"Rogue Metric" = {}')
    lines = errors(project(tmp_path, text))
    assert lines[0].startswith(
        "evalrunner.toml:18: metrics.\"Rogue Metric\": unknown metric 'Rogue Metric'. "
        "Did you mean 'Rouge Metric'?"
    ), lines
    # said once: the gates, thresholds and options are not checked against a selection that
    # did not resolve (each would say "not a metric of this run" and list no names)
    assert len(lines) == 1, lines
    # in a list, the entry's index (on the list's line)
    listed = errors(project(tmp_path, _list_form()))
    assert listed[0].startswith("evalrunner.toml:2: metrics[1]: unknown metric 'BLEW'"), listed


def _list_form() -> str:
    return (
        FILE.split("[metrics]")[0].replace(
            "iterations = 2", 'iterations = 2\n    metrics = ["Token F1", "BLEW"]'
        )
        + '    [gates]\n    fail_on = "never"\n'
    )


def test_a_threshold_out_of_range_points_at_the_metrics_table(tmp_path):
    text = FILE.replace('"Token F1" = { threshold = 0.6 }', '"Token F1" = { threshold = 7 }')
    (line,) = errors(project(tmp_path, text))
    assert line.startswith('evalrunner.toml:17: metrics."Token F1".threshold: 7 is outside')


def test_a_flags_bad_value_is_named_by_the_flag(tmp_path):
    (line,) = errors(project(tmp_path, FILE), Overrides(event={"thresholds": {"Token F1": 7.0}}))
    assert line.startswith("--threshold: 7 is outside the range of Token F1")


def test_a_threshold_set_twice_is_refused(tmp_path):
    text = FILE.replace('thresholds = { "ROUGE-L" = 0.3 }', 'thresholds = { "Token F1" = 0.3 }')
    (line,) = errors(project(tmp_path, text))
    assert line == (
        'evalrunner.toml:24: gates.thresholds."Token F1": also set as '
        'metrics."Token F1".threshold; keep one of the two'
    )


def test_a_missing_suite_file_names_the_folder_it_was_looked_for_in(tmp_path):
    (line,) = errors(project(tmp_path, FILE.replace('it = "it.csv"', 'it = "suites/it.csv"')))
    assert line == (
        f"evalrunner.toml:14: suites.it: suites/it.csv is not a file (paths are relative to "
        f"{tmp_path})"
    )


def test_a_picked_name_that_is_not_in_the_file(tmp_path):
    (line,) = errors(project(tmp_path, FILE), Overrides(targets=["prd"]))
    assert (
        line
        == "--target 'prd': not one of the targets of evalrunner.toml; its targets: prod, staging"
    )


YAML = """\
    # yaml-language-server: $schema=./evalrunner.schema.json
    targets:
      prod:
        url: http://127.0.0.1:9/ask
        timeout_seconds: soon
    suites:
      hr: hr.csv
    metrics: [Token F1]
    gates:
      fail_under: {Token F1: 0.5}
      max_error_share: 2
    """


def test_yaml_errors_name_the_file_the_line_and_the_key(tmp_path):
    lines = errors(project(tmp_path, YAML, "evalrunner.yaml"))
    assert lines[0].startswith("evalrunner.yaml:5: targets.prod.timeout_seconds: ")
    assert lines[1].startswith("evalrunner.yaml:11: gates.max_error_share: ")
    assert "less than or equal to 1" in lines[1]


def test_yaml_project_cells(tmp_path):
    path = project(tmp_path, YAML.replace("soon", "5").replace(": 2", ": 0.2"), "evalrunner.yml")
    (cell,) = load_project(path, defaults=NONE).cells
    assert cell.event["target"] == {
        "url": "http://127.0.0.1:9/ask",
        "timeout_seconds": 5,
        "name": "prod",
    }
    assert cell.event["max_error_share"] == 0.2


def test_a_bad_name_is_refused_as_a_folder_name(tmp_path):
    text = FILE.replace("[targets.staging]", '[targets."../up"]')
    (line,) = errors(project(tmp_path, text))
    assert line.startswith("evalrunner.toml:8: targets.\"../up\": '../up' is not a valid name")


def test_every_problem_of_the_file_at_once(tmp_path):
    text = FILE.replace('fail_on = "regressions"', 'fail_onn = "never"')
    text = text.replace('it = "it.csv"', 'it = "gone.csv"')
    lines = errors(project(tmp_path, text))
    assert [line.split(": ")[0:2] for line in lines] == [
        ["evalrunner.toml:22", "gates.fail_onn"],
        ["evalrunner.toml:14", "suites.it"],
    ]


def test_an_s3_suite_is_read_with_the_users_credentials(tmp_path, monkeypatch):
    import boto3
    from moto import mock_aws

    from evalrunner.project.cells import fetch_s3_suites

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    text = FILE.replace('it = "it.csv"', 'it = "s3://team-suites/regression/it.csv"')
    loaded = load_project(project(tmp_path, text), Overrides(targets=["prod"]), NONE)
    assert loaded.cells[1].event["key"] == "test-suites/it.csv"
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="team-suites")
        s3.put_object(Bucket="team-suites", Key="regression/it.csv", Body=b"question\nVPN?\n")
        fetch_s3_suites(loaded, tmp_path / "scratch", s3)
        assert loaded.cells[1].suite_path.read_bytes() == b"question\nVPN?\n"
        assert loaded.cells[0].suite_path == tmp_path / "hr.csv"  # a local one stays
        gone = load_project(
            project(tmp_path, text.replace("regression/it.csv", "nope/it.csv")), None, NONE
        )
        with pytest.raises(ProjectError, match=r"^evalrunner.toml:14: suites.it: cannot read "):
            fetch_s3_suites(gone, tmp_path / "scratch2", s3)


def test_an_s3_suite_must_name_a_bucket_and_a_key(tmp_path):
    (line,) = errors(
        project(tmp_path, FILE.replace('it = "it.csv"', 'it = "s3://bucket-only.csv"'))
    )
    assert line == "evalrunner.toml:14: suites.it: 's3://bucket-only.csv' is not s3://bucket/key"


JUDGE = '[judge]\nopenai = { base_url = "http://127.0.0.1:9/v1", model = "judge" }\n'


def test_judge_timeout_sets_the_files_judges_timeout(tmp_path):
    path = project(tmp_path, FILE + JUDGE)
    (cell, *_) = load_project(path, Overrides(judge_timeout=300.0), NONE).cells
    assert cell.event["judge"] == {
        "openai": {"base_url": "http://127.0.0.1:9/v1", "model": "judge"},
        "timeout_seconds": 300.0,
    }
    (line,) = errors(project(tmp_path, FILE), Overrides(judge_timeout=300.0))
    assert line.startswith("--judge-timeout sets the judge's per-call timeout, but no judge")


def test_a_credential_in_the_file_never_reaches_a_message(tmp_path):
    text = FILE.replace(
        'url = "http://127.0.0.1:9/ask"\n    name = "staging-eu"',
        'url = "http://127.0.0.1:9/ask"\n    headers = { Authorization = "Bearer s3cr3t-t0ken" }\n'
        '    timeout_seconds = "Bearer s3cr3t-t0ken"',
    )
    (line,) = errors(project(tmp_path, text))
    assert line.startswith("evalrunner.toml:11: targets.staging.timeout_seconds: ")
    assert "s3cr3t" not in line


def test_a_target_named_as_a_matrix_file_is_refused(tmp_path):
    """Its report folder would be <output>/matrix.json, and the matrix summary could not be
    written after every cell had run."""
    text = FILE.replace("[targets.staging]", '[targets."Matrix.JSON"]')
    (line,) = errors(project(tmp_path, text))
    assert line.startswith('evalrunner.toml:8: targets."Matrix.JSON": ')
    assert "matrix.json" in line and "rename" in line


def test_names_that_differ_only_in_case_are_refused(tmp_path):
    """On macOS and Windows they are one report folder: one cell's reports and baseline
    would overwrite the other's."""
    text = FILE.replace("[targets.staging]", "[targets.PROD]").replace(
        'it = "it.csv"', 'HR = "it.csv"'
    )
    lines = errors(project(tmp_path, text))
    assert [line.split(": ")[0:2] for line in lines] == [
        ["evalrunner.toml:8", "targets.PROD"],
        ["evalrunner.toml:14", "suites.HR"],
    ]
    assert "same report folder as targets.prod" in lines[0]


def test_yaml_keys_are_names_as_written_never_dates_numbers_or_booleans(tmp_path):
    """YAML reads the key `on` as true, `2024-01-01` as a date and `1` as a number; a
    project's keys are names, as in TOML. Before, a date key crashed with a TypeError
    traceback and `on` was refused as "True is not a valid name"."""
    text = """\
        targets: {1: {url: "http://127.0.0.1:9/ask"}, on: {url: "http://127.0.0.1:9/ask"}}
        suites: {2024-01-01: hr.csv, no: it.csv}
        """
    loaded = load_project(project(tmp_path, text, "evalrunner.yaml"), defaults=NONE)
    assert [c.label for c in loaded.cells][:2] == ["1 × 2024-01-01", "1 × no"]
    assert loaded.cells[-1].out_dir == tmp_path / "evalrunner-out" / "on" / "no"


def test_a_yaml_key_that_is_a_list_is_refused_at_its_line(tmp_path):
    text = (
        'targets: {a: {url: "http://127.0.0.1:9/ask"}}\nsuites: {hr: hr.csv}\n'
        "metrics: {? [a, b] : {}}\n"
    )
    with pytest.raises(ProjectError, match=r"evalrunner\.yaml:3: .*a key must be a name"):
        load_project(project(tmp_path, text, "evalrunner.yaml"), defaults=NONE)


def test_a_judge_error_names_the_key_path_as_written(tmp_path):
    """The judge's own check names `judge.openai.headers`; it was shown as the one quoted
    key judge."openai.headers", which is not what the file says."""
    text = FILE + '\n    [judge.openai]\n    base_url = "http://127.0.0.1:9/v1"\n    model = "m"\n'
    text += "    bogus = 1\n"
    (line,) = errors(project(tmp_path, text))
    bogus = textwrap.dedent(text).splitlines().index("bogus = 1") + 1
    assert line.startswith(f"evalrunner.toml:{bogus}: judge.openai.bogus: "), line


def test_an_unknown_judge_key_is_refused_with_the_valid_ones(tmp_path):
    """As a target's unknown key is: the judge's valid keys at its level, not pydantic's
    bare "Extra inputs are not permitted"."""
    base = textwrap.dedent(FILE)
    at = len(base.splitlines()) + 2  # the line after [judge] and its openai
    (line,) = errors(project(tmp_path, base + JUDGE + "timeout = 30\n"))
    assert line.startswith(
        f"evalrunner.toml:{at + 1}: judge.timeout: unknown key; valid keys here: "
    )
    assert "openai, bedrock" in line and "timeout_seconds" in line and "max_tokens" in line
    nested = JUDGE.replace('model = "judge"', 'model = "judge", modle = "x"')
    (line,) = errors(project(tmp_path, base + nested))
    assert line.startswith(
        f"evalrunner.toml:{at}: judge.openai.modle: unknown key; valid keys here: "
    )
    assert "base_url, model" in line
