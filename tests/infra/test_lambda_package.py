"""The Lambda side: the core library's dependencies without torch, moto or the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from infra.lambda_package import (
    _name,
    lambda_requirements,
    layer_problem,
    manifest_text,
)


def test_requirements_are_the_core_dependencies_and_the_laptop_ones_an_extra():
    import tomllib

    from infra.lambda_package import REPO_ROOT

    names = {_name(r) for r in lambda_requirements()}
    assert {"pydantic", "openpyxl", "aws-lambda-powertools", "boto3", "jsonschema"} <= names
    assert not names & {"torch", "sentence-transformers", "moto", "typer", "rich"}
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    local = {_name(r) for r in project["optional-dependencies"]["local"]}
    assert {"moto", "typer", "rich"} <= local


def test_layer_problem(tmp_path):
    assert "python is missing" in layer_problem(tmp_path)
    (tmp_path / "python").mkdir()
    assert "do not match" in layer_problem(tmp_path)
    (tmp_path / "requirements.txt").write_text(manifest_text(lambda_requirements()))
    assert layer_problem(tmp_path) is None


def test_handlers_import_without_moto_typer_rich_or_torch():
    """What the layer leaves out must not be needed by any handler."""
    code = textwrap.dedent(
        """
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"moto", "typer", "rich", "torch", "aws_cdk"}:
                    raise ImportError(f"{name} is not in the Lambda package")
                return None

        sys.meta_path.insert(0, Block())
        import lambdas.prepare, lambdas.run_case, lambdas.score, lambdas.aggregate
        import lambdas.start_from_upload
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
