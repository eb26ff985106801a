"""The project file's JSON Schema: generated from the model, shipped current, and what
editors check a file against agrees with what the model accepts."""

from __future__ import annotations

import json
import tomllib

import jsonschema
import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.project.model import ProjectFile
from evalrunner.project.schema import SHIPPED, build_project_schema, render

VALID = """
iterations = 2
metrics = ["Token F1"]
[targets.prod]
url = "http://127.0.0.1:9/ask"
[targets.agent]
agentId = "AGENT12345"
agentAliasId = "ALIAS12345"
[suites]
hr = "hr.csv"
[gates]
fail_under = { "Token F1" = 0.5 }
[[judge_metrics]]
name = "Politeness"
criteria = "Is the answer polite?"
evaluation_params = ["input", "actual_output"]
"""


def test_shipped_schema_is_the_generated_one():
    assert SHIPPED.read_text("utf-8") == render(), (
        "evalrunner/schemas/project.schema.json is stale: run `python -m evalrunner.project.schema`"
    )


def test_the_command_prints_the_shipped_schema():
    result = CliRunner().invoke(app, ["schema", "project"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(SHIPPED.read_text("utf-8"))


def test_schema_and_model_agree():
    schema = build_project_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    doc = tomllib.loads(VALID)
    assert list(validator.iter_errors(doc)) == []
    ProjectFile.model_validate(doc)
    # the targets are the event's target kinds, their keys checked as the event's are
    targets = schema["properties"]["targets"]
    assert list(targets["patternProperties"].values()) == [{"$ref": "#/$defs/target"}]
    assert targets["additionalProperties"] is False  # a name that is no folder name


@pytest.mark.parametrize(
    "bad",
    [
        {"gates": {"fail_onn": "never"}},
        {"targets": {"prod": {"urll": "http://x"}}},
        {"iterations": 0},
        {"suites": {"../up": "hr.csv"}},
        {"metrics": {"Token F1": {"treshold": 0.5}}},
    ],
)
def test_both_refuse_what_the_file_must_not_hold(bad):
    doc = {**tomllib.loads(VALID), **bad}
    assert list(jsonschema.Draft202012Validator(build_project_schema()).iter_errors(doc))
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        ProjectFile.model_validate(doc)
