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
    assert not names & {"torch", "sentence-transformers", "moto", "typer", "rich", "spacy"}
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


def _wheel(folder, name: str, tag: str) -> None:
    """A minimal, valid wheel of a one-module package, tagged for ``tag``."""
    import base64
    import hashlib
    import zipfile

    dist = f"{name}-1.0.dist-info"
    files = {
        f"{name}.py": "VALUE = 1\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n"
        ),
    }
    lines = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        lines.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    lines.append(f"{dist}/RECORD,,")
    with zipfile.ZipFile(folder / f"{name}-1.0-{tag}.whl", "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)
        whl.writestr(f"{dist}/RECORD", "\n".join(lines) + "\n")


def test_the_layer_build_accepts_manylinux_2_28_and_2_34_wheels(tmp_path):
    """The python3.12 runtime has glibc 2.34: a pin published only as a manylinux_2_28 (or
    _2_34) wheel installs with the layer build's platform options (offline, from a local
    folder), and a wheel for a newer glibc or for this machine's Python does not."""
    from infra.lambda_package import platform_args

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "newglibc", "cp312-cp312-manylinux_2_28_x86_64")
    _wheel(wheels, "glibc234", "cp312-cp312-manylinux_2_34_x86_64")
    _wheel(wheels, "oldglibc", "cp312-cp312-manylinux2014_x86_64")
    _wheel(wheels, "toonew", "cp312-cp312-manylinux_2_39_x86_64")

    def install(*names: str, args: list[str]) -> subprocess.CompletedProcess[str]:
        target = tmp_path / "target"
        command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
        command += ["--quiet", "--no-index", "--find-links", str(wheels), "--target"]
        return subprocess.run(
            [*command, str(target), *args, *names], capture_output=True, text=True, timeout=120
        )

    done = install("newglibc", "glibc234", "oldglibc", args=platform_args())
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (tmp_path / "target").glob("*.py")} == {
        "newglibc.py", "glibc234.py", "oldglibc.py"
    }  # fmt: skip
    assert install("toonew", args=platform_args()).returncode != 0
    # the options before this change refused the manylinux_2_28 wheel
    old = ["--platform", "manylinux2014_x86_64", "--implementation", "cp"]
    old += ["--python-version", "3.12", "--only-binary=:all:"]
    assert install("newglibc", args=old).returncode != 0
