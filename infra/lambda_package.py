"""The Lambda functions' third-party dependencies, as a layer directory: ``make lambda-package``.

The functions' own code (``evalrunner/``, ``lambdas/``, ``state_machines/``) is an asset of
the repository itself (see ``infra/parts/functions.py``); its dependencies are installed here, once,
from PyPI wheels for the Lambda platform (CPython 3.12, manylinux x86_64), so that neither
``cdk synth`` nor ``cdk deploy`` needs Docker or a network. ``cdk synth`` refuses a missing
or stale directory with the command to run.

What goes in: the core library's dependencies from ``pyproject.toml``, exactly. What only the
laptop needs (the embedded engine's moto, the CLI's typer and rich) is the ``local`` extra,
and torch the ``models`` extra: the model work runs in the GPU container (``gpu_tasks/``).

    python -m infra.lambda_package build/lambda-deps
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON_VERSION = "3.12"
#: The wheel platforms the python3.12 runtime runs (Amazon Linux 2023, glibc 2.34): pip
#: takes a wheel built for any of them (each also admits the older manylinux_2_x tags), so
#: a pin published only as manylinux_2_28 (or _2_34) installs instead of failing the
#: wheels-only install or silently falling back to an older release.
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux2014_x86_64")
#: Written into the layer directory; synth compares it with the current requirements.
MANIFEST = "requirements.txt"


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    return (match.group(0) if match else requirement).lower().replace("_", "-")


def lambda_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The pinned requirements of the Lambda layer, in pyproject order."""
    project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    return list(project["dependencies"])


def manifest_text(requirements: list[str]) -> str:
    return "".join(f"{r}\n" for r in requirements)


def layer_problem(directory: Path, requirements: list[str] | None = None) -> str | None:
    """Why ``directory`` cannot be deployed as the dependencies layer (None: it can)."""
    requirements = lambda_requirements() if requirements is None else requirements
    fix = "run 'make lambda-package' (it needs PyPI, not Docker)"
    if not (directory / "python").is_dir():
        return f"the Lambda dependencies are not built: {directory}/python is missing; {fix}"
    manifest = directory / MANIFEST
    if not manifest.is_file() or manifest.read_text("utf-8") != manifest_text(requirements):
        return (
            f"the Lambda dependencies in {directory} do not match pyproject.toml's "
            f"dependencies; {fix} again"
        )
    return None


def platform_args() -> list[str]:
    """pip's options that select wheels for the Lambda runtime, not for this machine."""
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    return [
        *platforms,
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--only-binary=:all:",
    ]


def build(directory: Path, *, python: str = sys.executable) -> Path:
    """Install the requirements into ``directory/python`` (the layer layout)."""
    requirements = lambda_requirements()
    target = directory / "python"
    if directory.exists():
        shutil.rmtree(directory)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as wheelhouse:
        # Some pins are published as source only (rouge-score): build those here, as
        # pure-Python wheels, so the platform install below can stay wheels-only.
        pip = [python, "-m", "pip", "--disable-pip-version-check"]
        subprocess.run(
            [*pip, "wheel", "--quiet", "--wheel-dir", wheelhouse, *requirements], check=True
        )
        subprocess.run(
            [
                *pip,
                "install",
                "--quiet",
                "--target",
                str(target),
                *platform_args(),
                "--find-links",
                wheelhouse,
                *requirements,
            ],
            check=True,
        )
    for cache in target.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    (directory / MANIFEST).write_text(manifest_text(requirements), "utf-8")
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default="build/lambda-deps", type=Path)
    parser.add_argument("--print", action="store_true", help="only print the requirements")
    args = parser.parse_args(argv)
    if args.print:
        print(manifest_text(lambda_requirements()), end="")
        return 0
    build(args.directory)
    size = sum(f.stat().st_size for f in args.directory.rglob("*") if f.is_file())
    print(f"{args.directory}: {size / 2**20:.0f} MiB unzipped (Lambda allows 250 MiB in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
