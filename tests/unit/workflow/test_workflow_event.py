"""The workflow event's model: its JSON Schema is the shipped file, and each bad field is
refused by name with the fix, before anything runs."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from evalrunner.errors import EventError
from evalrunner.workflow.event import SHIPPED, parse_workflow_event, render

GOOD: dict[str, Any] = {
    "workflow_id": "hr-1",
    "target": {"url": "http://localhost:8080/ask"},
    "suite": "workflow-inputs/hr/suite.xlsx",
}


def test_the_shipped_schema_is_the_model_s() -> None:
    assert SHIPPED.read_text("utf-8") == render(), (
        "evalrunner/schemas/workflow-event.schema.json is stale: run "
        "`python -m evalrunner.workflow.event`"
    )
    jsonschema.Draft202012Validator.check_schema(__import__("json").loads(render()))


def test_a_good_event_and_its_documents_prefix() -> None:
    event = parse_workflow_event({**GOOD, "documents": "workflow-inputs/hr/docs"})
    assert event.documents == "workflow-inputs/hr/docs/"
    assert event.folder_prefix(event.workflow_id) == "workflows/hr-1/"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"workflow_id": "hr 1"}, "workflow_id: String should match pattern"),
        ({"target": {"url": 5}}, "target.url: 5 is not of type 'string'"),
        ({"suite": "hr.xlsx"}, "suite: 'hr.xlsx' must be under workflow-inputs/"),
        ({"suite": "workflow-inputs/../x.xlsx"}, "must not contain '..'"),
        ({"suite": "workflow-inputs/hr.txt"}, "must end with one of .xlsx"),
        ({"labels": "s3://b/labels.csv"}, "labels: 's3://b/labels.csv' must be a relative key"),
        ({"suite": None}, "give documents (a key prefix"),
        ({"wait_seconds": -1}, "wait_seconds: Input should be greater than or equal to 0"),
        ({"redteam": {"num_tests": 50}}, "attacks to write (plugins x num_tests"),
        ({"redteam": {"plugins": ["nope"]}}, "redteam.plugins:"),
        ({"bogus": 1}, "bogus: Extra inputs are not permitted"),
        (
            {
                "judge": {
                    "openai": {
                        "base_url": "http://localhost:9/v1",
                        "model": "j",
                        "api_key_env": "AWS_SECRET_ACCESS_KEY",
                    }
                }
            },
            "judge.openai.api_key_env: AWS_SECRET_ACCESS_KEY is not an allowed secret variable",
        ),
        ({"workflow_id": "../other"}, "workflow_id: String should match pattern"),
        ({"workflow_id": "a/b"}, "workflow_id: String should match pattern"),
        ({"workflow_id": "hr-1\n"}, "workflow_id: String should match pattern"),
        ({"workflow_id": "h\u00e9"}, "workflow_id: String should match pattern"),
        ({"workflow_id": "a" * 1000}, "workflow_id: String should match pattern"),
    ],
)
def test_a_bad_field_is_refused_by_name(change: dict[str, Any], message: str) -> None:
    with pytest.raises(EventError, match="workflow event: ") as caught:
        parse_workflow_event({**GOOD, **change})
    assert message in caught.value.message


def test_the_readme_s_workflow_event_is_valid() -> None:
    """The example event of README's "The workflow deployed: one event" parses as it is."""
    import json
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[3] / "README.md").read_text("utf-8")
    section = readme[readme.index("#### The workflow deployed: one event") :]
    (example,) = re.findall(
        r"```json\n(.*?)```", section[: section.index("## How a run works")], re.S
    )
    event = parse_workflow_event(json.loads(example))
    assert event.workflow_id == "hr-2026-11" and event.labels == "workflow-inputs/hr/labels.csv"
