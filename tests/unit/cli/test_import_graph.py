"""What each command imports (issue 31 goal 1): the start-up the CLI pays is its imports, so
the import graph is asserted here, not a time. Each check runs in a fresh interpreter and
reads ``sys.modules`` afterwards; a module made lazy that comes back at the top of some file
fails here, naming it (bench/bench_startup.py has the seconds and MiB)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalrunner.evaluators.catalog_index import MODULES

#: Never needed to print help or the version: the engine (moto, boto3), the data and model
#: stacks, and what only some metrics or suites use.
NOT_FOR_HELP = (
    "boto3",
    "botocore",
    "moto",
    "evalrunner.engine",
    "nltk",
    "scipy",
    "sklearn",
    "pandas",
    "numpy",
    "torch",
    "jsonschema",
    "openpyxl",
    "jinja2",
)
#: Not imported by a run whose metrics need none of them: nltk (and the scipy.stats and
#: scikit-learn its top level pulls in) only for a stemming or BLEU metric, jsonschema only for
#: the JSON metrics, the model stacks only for the model metrics; openpyxl only for an xlsx
#: suite.
NOT_FOR_A_LEXICAL_RUN = (
    "nltk",
    "scipy",
    "sklearn",
    "pandas",
    "torch",
    "jsonschema",
    # openpyxl only to read or write an xlsx suite: its __init__ builds the workbook model and
    # imports numpy; the reports are written with XlsxWriter
    "openpyxl",
    # moto's Batch and EC2 models: the Step Functions parser reaches them through its Batch
    # task, and the engine imports the parser without them (evalrunner/engine/asl_parser.py)
    "moto.batch",
    "moto.ec2",
)
#: A ROUGE run imports nltk, but not the optional libraries nltk's top level would pull in
#: (evalrunner/evaluators/nltk_import.py).
NOT_FOR_A_ROUGE_RUN = tuple(n for n in NOT_FOR_A_LEXICAL_RUN if n != "nltk")

PROBE = """
import json, sys
{body}
print("MODULES " + json.dumps(sorted(sys.modules)))
"""


def loaded(body: str, cwd: Path | None = None) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=120,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-2000:]
    return set(json.loads(line[len("MODULES ") :]))


def present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)]


def test_help_and_version_import_nothing_heavy() -> None:
    body = """
from evalrunner.cli import app
for argv in (["--help"], ["--version"]):
    try:
        app(argv)
    except SystemExit as exc:
        assert exc.code == 0, (argv, exc.code)
"""
    modules = loaded(body)
    assert "evalrunner.cli.running" in modules  # the probe did load the commands
    # pydantic too: the verdict's models are not needed to list --fail-on's choices
    assert present(modules, (*NOT_FOR_HELP, "pydantic")) == []


def test_a_commands_help_imports_nothing_heavy() -> None:
    """(typer itself imports pydantic to read a command's options, so it is not listed.)"""
    body = """
from evalrunner.cli import app
for argv in (["run", "--help"], ["start", "--help"], ["estimate", "--help"]):
    try:
        app(argv)
    except SystemExit as exc:
        assert exc.code == 0, (argv, exc.code)
"""
    assert present(loaded(body), NOT_FOR_HELP) == []


def test_the_catalog_imports_no_metric_library() -> None:
    """The whole catalog (``metrics``, the default selection) imports every evaluator module:
    their libraries wait until a metric computes."""
    body = """
from evalrunner.evaluators import registry
assert len(registry.available()) > 40
"""
    assert present(loaded(body), NOT_FOR_A_LEXICAL_RUN) == []


def test_a_lexical_run_imports_only_what_its_metrics_need(tmp_path: Path) -> None:
    """A whole local run (logged answers, Exact match), reports written: the engine is there,
    nltk, scipy, scikit-learn, pandas, torch and jsonschema are not."""
    suite = tmp_path / "logged.csv"
    suite.write_text(
        "id,question,expected_answer,actual_answer\n"
        "a,How many days?,25 days,25 days\n"
        "b,Who approves?,the manager,HR\n",
        encoding="utf-8",
    )
    body = f"""
from evalrunner.cli import app
try:
    app(["run", "--suite", {str(suite)!r}, "--metric", "Exact match", "--out",
         {str(tmp_path / "out")!r}, "--quiet", "--fail-on", "errors"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
"""
    modules = loaded(body, cwd=tmp_path)
    assert "evalrunner.engine.local" in modules  # the run did go through the engine
    assert list((tmp_path / "out").rglob("*summary.json"))
    assert present(modules, NOT_FOR_A_LEXICAL_RUN) == []


def test_a_rouge_run_imports_nltk_without_scipy_or_scikit_learn(tmp_path: Path) -> None:
    """A whole local ROUGE run (logged answers), reports written: nltk's stemmer is there,
    scipy, scikit-learn, moto's Batch and EC2 models and the other evaluator modules are not."""
    suite = tmp_path / "logged.csv"
    suite.write_text(
        "id,question,expected_answer,actual_answer\n"
        "a,How many days?,25 days of leave,25 days of leave\n"
        "b,Who approves?,the manager,HR approves\n",
        encoding="utf-8",
    )
    body = f"""
from evalrunner.cli import app
try:
    app(["run", "--suite", {str(suite)!r}, "--metric", "Rouge Metric", "--out",
         {str(tmp_path / "out")!r}, "--quiet", "--fail-on", "errors"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
"""
    modules = loaded(body, cwd=tmp_path)
    assert "evalrunner.engine.local" in modules and "nltk.stem.porter" in modules
    assert list((tmp_path / "out").rglob("*summary.json"))
    assert present(modules, NOT_FOR_A_ROUGE_RUN) == []
    # the catalog index: of the evaluator modules, only ROUGE's own, from Prepare to the
    # reports (no step lists the whole catalog for a run that names its metrics)
    assert sorted(set(MODULES.values()) & modules) == ["evalrunner.evaluators.lexical"]


def test_rouge_and_bleu_still_load_nltk_when_they_compute() -> None:
    """The other side of the laziness: selecting the stemming metrics does reach nltk."""
    body = """
from evalrunner.evaluators.registry import resolve
from evalrunner.evaluators.base import Sample
sample = Sample(question="q", answer="the cats are running", expected_answer="cats run")
for name in ("Rouge Metric", "BLEU"):
    resolve(name)().score(sample)
"""
    assert "nltk.stem.porter" in loaded(body)


def test_the_engine_switch_is_read_without_the_engine() -> None:
    """``run`` refuses a bad EVALRUNNER_ENGINE_FAST before the pre-flight probe, which starts
    before the engine so that moto's imports run while the target answers it: reading the
    switch imports neither moto nor the engine."""
    body = """
from evalrunner.engine_switch import speed_seams_from_env
speed_seams_from_env()
"""
    assert present(loaded(body), ("moto", "boto3", "botocore", "evalrunner.engine")) == []


def test_run_starts_the_preflight_before_it_imports_the_engine(tmp_path: Path) -> None:
    """The pre-flight probe waits on the target while moto's Step Functions interpreter and
    the engine import (issue 31 goal 3): when ``run`` starts it, neither is imported yet."""
    suite = tmp_path / "logged.csv"
    suite.write_text("id,question,expected_answer,actual_answer\na,q?,yes,yes\n", "utf-8")
    body = f"""
from evalrunner.cli import app, running
original = running.start_preflight
def spy(*args, **kwargs):
    print("AT_PREFLIGHT " + json.dumps(sorted(sys.modules)))
    return original(*args, **kwargs)
running.start_preflight = spy
try:
    app(["run", "--suite", {str(suite)!r}, "--metric", "Exact match", "--out",
         {str(tmp_path / "out")!r}, "--quiet", "--fail-on", "errors"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
"""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=120,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("AT_PREFLIGHT ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-2000:]
    modules = set(json.loads(line[len("AT_PREFLIGHT ") :]))
    assert present(modules, ("moto", "evalrunner.engine.local", "lambdas")) == []
    assert "evalrunner.engine.local" in loaded_from(done.stdout)  # then the run imported it


def loaded_from(stdout: str) -> set[str]:
    line = next(x for x in stdout.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line[len("MODULES ") :]))
