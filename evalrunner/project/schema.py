"""The project file's JSON Schema, generated from :class:`~evalrunner.project.model.ProjectFile`
(whose shared fields are the event's own, and whose targets are the event's target kinds: the
schema takes their parts from the event's, :func:`evalrunner.event_schema.build_event_schema`).

Shipped as ``schemas/project.schema.json`` for editors (``#:schema`` in TOML with Taplo /
Even Better TOML, ``# yaml-language-server: $schema=`` in YAML); ``evalrunner schema project``
prints it, ``python -m evalrunner.project.schema`` rewrites the shipped copy, and a test fails
while it is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from evalrunner.event_schema import build_event_schema
from evalrunner.project.model import MetricSettings, ProjectFile

SHIPPED = Path(__file__).parent.parent / "schemas" / "project.schema.json"


def _refs(node: Any) -> Any:
    """The ``x-ref`` markers (a reference pydantic cannot hold) as JSON Schema ``$ref``s; a
    table of names (targets, suites) takes no other key than a name."""
    if isinstance(node, list):
        return [_refs(n) for n in node]
    if not isinstance(node, dict):
        return node
    if "x-ref" in node:
        return {"$ref": f"#/$defs/{node['x-ref']}"}
    if "patternProperties" in node:  # a name the pattern refuses is refused, as by the model
        node = {**node, "additionalProperties": False}
    return {k: _refs(v) for k, v in node.items()}


def build_project_schema() -> dict[str, Any]:
    """The project file's schema: the model's, its targets the event's target kinds."""
    schema: dict[str, Any] = _refs(ProjectFile.model_json_schema())
    defs: dict[str, Any] = schema.pop("$defs", {})
    defs["MetricSettings"] = _refs(MetricSettings.model_json_schema())
    defs.update(build_event_schema()["$defs"])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:evalrunner:project:1",
        "title": "evalrunner project file (evalrunner.toml / evalrunner.yaml)",
        **{k: v for k, v in schema.items() if k != "title"},
        "$defs": dict(sorted(defs.items())),
    }


def render() -> str:
    return json.dumps(build_project_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped() -> str:
    """The schema as shipped with this release."""
    return SHIPPED.read_text("utf-8")


if __name__ == "__main__":  # python -m evalrunner.project.schema: rewrite the shipped file
    SHIPPED.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {SHIPPED}\n")
