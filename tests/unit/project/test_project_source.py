"""Finding the project file, and the line of each key in TOML and YAML."""

from __future__ import annotations

import textwrap

import pytest

from evalrunner.project.source import (
    ProjectError,
    TomlLines,
    YamlLines,
    find_project,
    read_project,
)

TOML = textwrap.dedent(
    """\
    #:schema ./evalrunner.schema.json
    iterations = 2
    metrics = [
      "Token F1",
      "BLEU",
    ]

    [targets.prod]
    url = "http://127.0.0.1:9/ask"
    headers = { "x-team" = "qa" }

    [targets."staging eu"]
    url = "http://127.0.0.1:9/ask"

    [[judge_metrics]]
    name = "Politeness"

    [[judge_metrics]]
    name = "Brevity"
    gates.fail_under = { "Token F1" = 0.5 }
    """
)


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (("iterations",), 2),
        (("metrics",), 3),  # a multi-line array starts on its key's line
        (("metrics", 1), 3),
        (("targets",), 8),
        (("targets", "prod"), 8),
        (("targets", "prod", "url"), 9),
        (("targets", "prod", "headers", "x-team"), 10),
        (("targets", "staging eu", "url"), 13),
        (("judge_metrics", 0, "name"), 16),
        (("judge_metrics", 1), 18),
        (("judge_metrics", 1, "name"), 19),
        (("judge_metrics", 1, "gates", "fail_under", "Token F1"), 20),
    ],
)
def test_toml_lines_come_from_the_parser(path, line):
    assert TomlLines(TOML).line_of(path) == line


def test_a_toml_key_that_is_not_there_has_no_line():
    lines = TomlLines(TOML)
    assert lines.line_of(("targets", "nope")) is None
    assert lines.line_of(("judge_metrics", 5)) is None


YAML = textwrap.dedent(
    """\
    # yaml-language-server: $schema=./evalrunner.schema.json
    iterations: 2
    targets:
      prod:
        url: http://127.0.0.1:9/ask
    suites:
      hr: hr.csv
    judge_metrics:
      - name: Politeness
      - name: Brevity
        criteria: short
    """
)


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (("iterations",), 2),
        (("targets", "prod"), 4),
        (("targets", "prod", "url"), 5),
        (("suites", "hr"), 7),
        (("judge_metrics", 1), 10),
        (("judge_metrics", 1, "criteria"), 11),
    ],
)
def test_yaml_lines_come_from_the_node_marks(path, line):
    import yaml

    assert YamlLines(yaml.compose(YAML, Loader=yaml.SafeLoader)).line_of(path) == line


def test_where_falls_back_to_the_nearest_key_that_exists(tmp_path):
    path = tmp_path / "evalrunner.toml"
    path.write_text(TOML, "utf-8")
    source = read_project(path)
    assert source.where(("targets", "prod", "timeout_seconds")) == "evalrunner.toml:8"
    assert source.where(("suites",)) == "evalrunner.toml"


def test_a_syntax_error_names_the_line(tmp_path):
    toml = tmp_path / "evalrunner.toml"
    toml.write_text('iterations = 1\n[targets.prod\nurl = "x"\n', "utf-8")
    with pytest.raises(ProjectError, match=r"evalrunner.toml: not valid TOML: .*line 2"):
        read_project(toml)
    yml = tmp_path / "evalrunner.yaml"
    yml.write_text("targets:\n  prod: {url: x\nsuites: 1\n", "utf-8")
    with pytest.raises(ProjectError, match=r"^evalrunner.yaml:\d+: not valid YAML"):
        read_project(yml)


def test_found_in_the_folder_or_a_parent_up_to_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    deep = repo / "services" / "hr"
    deep.mkdir(parents=True)
    (repo / ".git").mkdir()
    assert find_project(deep) is None
    (repo / "evalrunner.yaml").write_text("{}", "utf-8")
    assert find_project(deep) == repo / "evalrunner.yaml"
    (deep / "evalrunner.toml").write_text("", "utf-8")  # the nearest wins
    assert find_project(deep) == deep / "evalrunner.toml"


def test_not_looked_for_above_the_repository_root(tmp_path):
    (tmp_path / "evalrunner.toml").write_text("", "utf-8")  # outside the repository
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    assert find_project(repo) is None


def test_outside_a_repository_only_the_current_folder(tmp_path):
    (tmp_path / "evalrunner.toml").write_text("", "utf-8")
    (tmp_path / "sub").mkdir()
    assert find_project(tmp_path / "sub") is None
    assert find_project(tmp_path) == tmp_path / "evalrunner.toml"


def test_two_project_files_in_one_folder_are_refused(tmp_path):
    (tmp_path / "evalrunner.toml").write_text("", "utf-8")
    (tmp_path / "evalrunner.yml").write_text("", "utf-8")
    with pytest.raises(ProjectError, match="keep one project file, or name one with --config"):
        find_project(tmp_path)


def test_a_yaml_key_given_twice_is_refused(tmp_path):
    yml = tmp_path / "evalrunner.yaml"
    yml.write_text("targets:\n  prod: {url: http://a}\n  prod: {url: http://b}\n", "utf-8")
    with pytest.raises(ProjectError) as caught:
        read_project(yml)
    assert caught.value.message == (
        "evalrunner.yaml:3: targets.prod: given twice (first on line 2); keep one"
    )


def _bomb(levels: int) -> str:
    """A "billion laughs" file: each level's list holds the previous one ten times, so the
    document is small but means 10**levels values once its aliases are expanded."""
    lines = ["targets: {a: {url: 'http://127.0.0.1:9/ask'}}", "l0: &l0 [1,1,1,1,1,1,1,1,1,1]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    path = tmp_path / "evalrunner.yaml"
    path.write_text(_bomb(9))  # 10**9 values: walking them would never finish
    with pytest.raises(ProjectError, match=r"evalrunner\.yaml: .*aliases.* at most 100000"):
        read_project(path)


def test_yaml_aliases_of_a_reasonable_size_are_read(tmp_path):
    path = tmp_path / "evalrunner.yaml"
    path.write_text(
        "shared: &h {x-team: qa}\n"
        "targets:\n  a: {url: 'http://127.0.0.1:9/ask', headers: *h}\n"
        "  b: {url: 'http://127.0.0.1:9/ask', headers: *h}\n"
    )
    assert read_project(path).data["targets"]["b"]["headers"] == {"x-team": "qa"}


def test_a_yaml_alias_inside_its_own_anchor_is_refused(tmp_path):
    path = tmp_path / "evalrunner.yaml"
    path.write_text("targets:\n  a: &r {url: 'http://127.0.0.1:9/ask', headers: *r}\n")
    with pytest.raises(ProjectError, match=r"evalrunner\.yaml:2: .*refers to itself"):
        read_project(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("evalrunner.yaml", "targets: " + "[" * 3000 + "]" * 3000 + "\n"),
        ("evalrunner.toml", "targets = " + "[" * 3000 + "]" * 3000 + "\n"),
    ],
)
def test_a_file_nested_too_deeply_is_a_clear_error(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ProjectError, match=rf"{name}: nested too deeply"):
        read_project(path)


def test_a_key_of_a_long_toml_file_is_found_with_few_parses():
    """The line of a key is searched by halving, not prefix by prefix: a 3,000-line file's
    error took 17 s to locate when every prefix was parsed (quadratic in its length)."""
    text = "".join(f'[targets.t{i}]\nurl = "http://127.0.0.1:9/{i}"\n\n' for i in range(3000))
    text += 'arr = [\n  1,\n  2,\n]\n[gates]\nfail_onn = "never"\n'
    lines = TomlLines(text)
    assert lines.line_of(("gates", "fail_onn")) == 9006
    assert lines.line_of(("targets", "t2999", "arr")) == 9001  # a multi-line value: its key
    assert lines.line_of(("targets", "t1500", "url")) == 4502
    assert lines.line_of(("targets", "t3000")) is None
    assert len(lines._prefixes) < 200
