"""Issue 32 item 1, deployed: a plugin package named in cdk.json ``plugins`` is bundled into
the functions' code asset at synth, ``EVALRUNNER_PLUGINS`` lists it on every function, and
the synthesised code runs it: ``evalrunner start --event`` (the state machine and the
deployed handlers in the embedded engine) from the asset folder, in a fresh process that
is "in Lambda" (``AWS_LAMBDA_FUNCTION_NAME`` set), with the function's environment."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalrunner.errors import ConfigError
from infra.config import load_config
from tests.support.catalog import restored_catalog

from .conftest import config_for

PLUGIN = '''"""A team's own metric, deployed with the stack."""
import evalrunner


@evalrunner.metric(name="Mentions Days", threshold=0.5)
def mentions_days(sample: evalrunner.Sample) -> evalrunner.Scored:
    found = "days" in (sample.answer or "")
    return evalrunner.Scored(1.0 if found else 0.0, f"from {__file__}")
'''
SUITE = (
    "question,expected_answer\n"
    "How many days of annual leave do I get?,25 days of annual leave.\n"
    "Who approves leave?,Your line manager approves leave.\n"
)


@pytest.fixture(scope="module")
def plugin_synth(tmp_path_factory, fake_dependencies) -> dict[str, Any]:
    from infra.app import build_app, cdk_json_context

    package = tmp_path_factory.mktemp("plugin") / "team_metrics"
    package.mkdir()
    (package / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    context = cdk_json_context()
    context["evalrunner"] = config_for(
        context,
        fake_dependencies,
        plugins=[str(package)],
    )
    outdir = tmp_path_factory.mktemp("cdk.out")
    assembly = build_app(context, outdir=str(outdir)).synth()  # cdk-nag on: raises on findings
    (stack,) = assembly.stacks
    manifest = json.loads((outdir / f"{stack.stack_name}.assets.json").read_text())
    (image,) = manifest["dockerImages"].values()
    (job,) = [
        r for r in stack.template["Resources"].values() if r["Type"] == "AWS::Batch::JobDefinition"
    ]
    job_env = {
        e["Name"]: e["Value"] for e in job["Properties"]["ContainerProperties"]["Environment"]
    }
    functions = {
        r["Properties"]["Handler"]: r["Properties"]
        for r in stack.template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    return {
        "outdir": outdir,
        "functions": functions,
        "image": outdir / image["source"]["directory"],
        "job_env": job_env,
    }


def _asset(outdir: Path, props: dict[str, Any]) -> Path:
    return outdir / f"asset.{props['Code']['S3Key'].removesuffix('.zip')}"


def test_the_plugin_is_in_every_functions_code_and_allowed_by_name(plugin_synth):
    functions = plugin_synth["functions"]
    assert set(functions) >= {
        "lambdas.prepare.handler",
        "lambdas.run_case.handler",
        "lambdas.score.handler",
        "lambdas.aggregate.handler",
    }
    for props in functions.values():
        assert props["Environment"]["Variables"]["EVALRUNNER_PLUGINS"] == "team_metrics"
        asset = _asset(plugin_synth["outdir"], props)
        assert sorted(p.name for p in asset.iterdir()) == [
            "evalrunner",
            "lambdas",
            "state_machines",
            "team_metrics",
        ]
        assert (asset / "team_metrics" / "__init__.py").read_text(encoding="utf-8") == PLUGIN
        assert not list(asset.rglob("__pycache__"))


def test_the_gpu_scoring_image_holds_the_plugin_and_its_job_imports_it(plugin_synth):
    """The GPU job builds the run's context too, which imports the run's plugins: the staged
    image context holds them where the job's PYTHONPATH points, and they import from there."""
    image, env = plugin_synth["image"], plugin_synth["job_env"]
    assert env["EVALRUNNER_PLUGINS"] == "team_metrics"
    assert env["PYTHONPATH"] == "/opt/evalrunner/gpu_tasks/plugins"
    plugin = image / "gpu_tasks" / "plugins" / "team_metrics" / "__init__.py"
    assert plugin.read_text(encoding="utf-8") == PLUGIN
    assert (image / "gpu_tasks" / "score_entrypoint.py").is_file()
    # The Dockerfile's WORKDIR is /opt/evalrunner: the staged context stands in for it.
    code = (
        "import gpu_tasks.score_entrypoint; from evalrunner.evaluators import plugins; "
        "(cls,) = plugins.load(['team_metrics']); import sys; "
        "print(sys.modules[cls.__module__].__file__)"
    )
    path = env["PYTHONPATH"].replace("/opt/evalrunner", str(image))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=image,
        env={**os.environ, "PYTHONPATH": f"{path}{os.pathsep}{image}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(plugin)


def _start(tmp_path: Path, asset: Path, env: dict[str, Any], plugins: list[str]):
    (tmp_path / "hr.csv").write_text(SUITE, encoding="utf-8")
    event = {
        "key": "test-suites/hr.csv",
        "iterations": 1,
        "target": {"lambdaArn": "evalrunner-demo-hr"},
        "metrics": ["Mentions Days", "Rouge Metric"],
        "plugins": plugins,
        "fail_on": "never",
    }
    (tmp_path / "event.json").write_text(json.dumps(event), encoding="utf-8")
    # The function's own variables (those CloudFormation resolves, e.g. the bucket, are
    # the local engine's), "in Lambda", and nothing of this checkout on the path.
    literal = {k: v for k, v in env.items() if isinstance(v, str)}
    proc_env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        **literal,
        "AWS_LAMBDA_FUNCTION_NAME": "Evalrunner-Prepare",
        "PYTHONPATH": str(asset),
    }
    proc_env.pop("EVALRUNNER_BUCKET", None)
    code = (
        "import sys; from evalrunner.cli import app; "
        "sys.exit(app(['start', '--event', 'event.json', '--out', 'out'], standalone_mode=False))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=proc_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_the_synthesised_code_runs_the_plugin_metric_an_event_names(plugin_synth, tmp_path):
    props = plugin_synth["functions"]["lambdas.prepare.handler"]
    asset = _asset(plugin_synth["outdir"], props)
    done = _start(tmp_path, asset, props["Environment"]["Variables"], ["team_metrics"])
    assert done.returncode == 0, done.stdout + done.stderr
    (details,) = (tmp_path / "out").rglob("*-details.csv")
    rows = list(csv.DictReader(details.open(encoding="utf-8-sig")))
    assert len(rows) == 2 and {r["status"] for r in rows} == {"ok"}
    for row in rows:  # the metric's own verdict on each answer the demo target gave
        expected = 1.0 if "days" in row["answer"] else 0.0
        assert float(row["Mentions Days score"]) == expected
        assert row["Mentions Days success"] == ("true" if expected else "false")
    # ... imported from the code asset, not from this checkout or the tmp folder
    reason = rows[0]["Mentions Days reason"]
    assert f"from {asset / 'team_metrics' / '__init__.py'}" in reason
    (result,) = (tmp_path / "out").rglob("*-result.csv")
    names = {r["name"] for r in csv.DictReader(result.open(encoding="utf-8-sig"))}
    assert "Mentions Days" in names


@pytest.mark.slow
def test_an_event_naming_a_module_the_deployment_lacks_is_refused(plugin_synth, tmp_path):
    props = plugin_synth["functions"]["lambdas.prepare.handler"]
    asset = _asset(plugin_synth["outdir"], props)
    done = _start(tmp_path, asset, props["Environment"]["Variables"], ["json"])
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "plugin 'json': a deployed run imports only the plugin modules" in output
    assert "team_metrics" in output
    assert not list((tmp_path / "out").rglob("*-details.csv"))


PREPARE = r"""
import json, sys
from dataclasses import dataclass
from evalrunner.errors import EventError
from lambdas.prepare import handler

@dataclass
class LambdaContext:  # the attributes Powertools' inject_lambda_context reads
    function_name: str = "Evalrunner-Prepare"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:111122223333:function:Prepare"
    aws_request_id: str = "r-1"

try:
    handler({"event": json.loads(sys.argv[1])}, LambdaContext())
except EventError as exc:
    print("refused:", *exc.problems, sep="\n")
"""


def test_the_deployed_prepare_handler_refuses_a_module_its_code_does_not_list(
    plugin_synth, tmp_path
):
    """The synthesised Prepare itself, called as Lambda calls it, with its environment: the
    event may not make it import a module the deployment did not bundle (the stdlib json
    stands for any importable module), nor one bundled in another deployment."""
    props = plugin_synth["functions"]["lambdas.prepare.handler"]
    asset = _asset(plugin_synth["outdir"], props)
    env = {k: v for k, v in props["Environment"]["Variables"].items() if isinstance(v, str)}
    proc_env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        **env,
        "AWS_LAMBDA_FUNCTION_NAME": "Evalrunner-Prepare",
        "EVALRUNNER_BUCKET": "evalrunner-test-bucket",
        "PYTHONPATH": str(asset),
    }
    for plugins in (["json"], ["other_team_metrics"]):
        event = {
            "key": "test-suites/hr.csv",
            "iterations": 1,
            "target": {"lambdaArn": "arn:aws:lambda:eu-west-1:111122223333:function:hr"},
            "plugins": plugins,
        }
        done = subprocess.run(
            [sys.executable, "-c", PREPARE, json.dumps(event)],
            cwd=tmp_path,
            env=proc_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1:] == [
            f"plugins[0]: plugin {plugins[0]!r}: a deployed run imports only the plugin modules "
            "its deployment holds (EVALRUNNER_PLUGINS: team_metrics). Run it locally with "
            "--plugin, or add the module to the function code."
        ]


def test_cdk_json_plugins_are_validated(tmp_path):
    """cdk.json plugins are checked at synth; the schedule check imports the plugin, so its
    metric is registered in this process: the catalog is put back after (restored_catalog)."""
    with restored_catalog("ok"):
        _check_cdk_json_plugins(tmp_path)


def _check_cdk_json_plugins(tmp_path):
    (tmp_path / "json.py").write_text("", encoding="utf-8")
    (tmp_path / "no_init").mkdir()
    (tmp_path / "ok.py").write_text(
        "import evalrunner\n\n\n@evalrunner.metric(name='Bundle Probe')\n"
        "def probe(sample):\n    return 1.0\n",
        encoding="utf-8",
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ok.py").write_text("", encoding="utf-8")
    bad = {
        str(tmp_path / "missing.py"): "no such .py file or package folder",
        str(tmp_path / "no_init"): "a folder without __init__.py",
        str(tmp_path / "json.py"): "'json' is a standard library module",
    }
    for value, message in bad.items():
        with pytest.raises(ConfigError, match=message):
            load_config({"plugins": [value]})
    with pytest.raises(ConfigError, match="'ok' is listed more than once"):
        load_config({"plugins": [str(tmp_path / "ok.py"), str(tmp_path / "pkg" / "ok.py")]})
    config = load_config({"plugins": [str(tmp_path / "ok.py")]})
    assert config.plugins_env() == {"EVALRUNNER_PLUGINS": "ok"}
    schedule = {
        "name": "nightly",
        "expression": "rate(1 day)",
        "key": "test-suites/hr.csv",
        "target": {"url": "https://assistant.example.com/ask"},
        "iterations": 1,
        "event": {"plugins": ["other"]},
    }
    with pytest.raises(ConfigError, match=r"event\.plugins: 'other' is not among"):
        load_config({"plugins": [str(tmp_path / "ok.py")], "schedules": [schedule]})
    # A schedule may name the deployment's plugin and its metric: checked at synth with the
    # plugin importable as in the deployed code, and sys.path left as it was.
    path = list(sys.path)
    schedule["event"] = {"plugins": ["ok"], "metrics": ["Bundle Probe"]}
    load_config({"plugins": [str(tmp_path / "ok.py")], "schedules": [schedule]})
    assert sys.path == path
    schedule["event"] = {"plugins": ["ok"], "metrics": ["Bundle Probes"]}
    with pytest.raises(ConfigError, match="Bundle Probes"):
        load_config({"plugins": [str(tmp_path / "ok.py")], "schedules": [schedule]})
