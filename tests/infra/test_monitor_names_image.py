"""A monitor that masks personal names (cdk.json ``monitor.pii.ner_model``) deploys its
function as a container image (infra/ner_image.py): spaCy does not fit the zip Lambda beside
the layer. Synth stays offline (the image is only staged); the staged folder holds what the
function needs, and its code masks names with its model as the deployed function would."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import spacy

from evalrunner.errors import ConfigError
from evalrunner.privacy import ENV_PII
from infra.app import cdk_json_context
from infra.config import load_config
from infra.lambda_package import lambda_requirements
from infra.ner_image import HANDLER, MODEL_IN_IMAGE, image_requirements

from .conftest import MONITOR, config_for

NAMES_PII = {"kinds": ["EMAIL", "PHONE", "ADDRESS", "PERSON"], "phone_regions": ["US"]}


def save_model(folder: Path) -> Path:
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": [{"LOWER": "jane"}, {"LOWER": "doe"}]}])  # type: ignore[attr-defined]
    nlp.to_disk(folder)
    return folder


@pytest.fixture(scope="module")
def names_synth(tmp_path_factory, fake_dependencies):
    from infra.app import build_app

    model = save_model(tmp_path_factory.mktemp("model") / "names")
    context = cdk_json_context()
    monitor = {**copy.deepcopy(MONITOR), "pii": {**NAMES_PII, "ner_model": str(model)}}
    context["evalrunner"] = config_for(context, fake_dependencies, monitor=monitor)
    outdir = tmp_path_factory.mktemp("cdk.out")
    assembly = build_app(context, outdir=str(outdir)).synth()  # cdk-nag included
    (stack,) = assembly.stacks
    return outdir, stack.template


def functions(template: dict) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}


def test_the_monitor_is_an_image_and_the_pipeline_stays_zip(names_synth) -> None:
    _, template = names_synth
    found = functions(template)
    images = [
        r["Properties"] for r in found.values() if r["Properties"].get("PackageType") == "Image"
    ]
    (monitor,) = images
    assert "ImageUri" in monitor["Code"] and "Handler" not in monitor and "Layers" not in monitor
    assert monitor["ReservedConcurrentExecutions"] == 1 and monitor["Timeout"] == 900
    env = monitor["Environment"]["Variables"]
    assert json.loads(env[ENV_PII]) == {**NAMES_PII, "ner_model": MODEL_IN_IMAGE}
    assert "EVALRUNNER_MONITOR_SOURCE" in env and "POWERTOOLS_SERVICE_NAME" in env
    zips = [r["Properties"] for r in found.values() if "Handler" in r["Properties"]]
    assert {p["Handler"] for p in zips} >= {"lambdas.prepare.handler", "lambdas.aggregate.handler"}
    assert all(p.get("Layers") for p in zips if p["Handler"].startswith("lambdas."))


def staged(outdir: Path) -> Path:
    (dockerfile,) = outdir.glob("asset.*/Dockerfile")
    return dockerfile.parent


def test_the_staged_image_holds_the_pins_the_code_and_the_model(names_synth) -> None:
    folder = staged(names_synth[0])
    dockerfile = (folder / "Dockerfile").read_text("utf-8")
    assert "FROM public.ecr.aws/lambda/python:3.12" in dockerfile
    assert f'CMD ["{HANDLER}"]' in dockerfile and MODEL_IN_IMAGE in dockerfile
    requirements = (folder / "requirements.txt").read_text("utf-8").split()
    assert requirements == image_requirements() == [*lambda_requirements(), "spacy==3.8.18"]
    assert (folder / "code" / "lambdas" / "monitor.py").is_file()
    assert (folder / "code" / "evalrunner" / "privacy_names.py").is_file()
    assert (folder / "ner-model" / "config.cfg").is_file()


def test_the_staged_code_masks_names_with_the_staged_model(names_synth, tmp_path: Path) -> None:
    # what the function does at start, with the image's paths swapped for the staged ones
    folder = staged(names_synth[0])
    env = functions(names_synth[1])
    (monitor,) = [r for r in env.values() if r["Properties"].get("PackageType") == "Image"]
    value = monitor["Properties"]["Environment"]["Variables"][ENV_PII]
    value = value.replace(MODEL_IN_IMAGE, str(folder / "ner-model"))
    script = (
        "import os, sys; from evalrunner.privacy import masker_from_env; "
        "print(masker_from_env(os.environ).mask('Jane Doe, jd@ex.com'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder / "code",
        env={ENV_PII: value, "PYTHONPATH": str(folder / "code")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "<PERSON_1>, <EMAIL_1>"


def monitor_problem(pii: dict) -> str:
    raw = copy.deepcopy(cdk_json_context()["evalrunner"])
    raw["monitor"] = {**copy.deepcopy(MONITOR), "pii": pii}
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    return str(caught.value)


def test_names_that_cannot_deploy_fail_synth_naming_the_fix(tmp_path: Path) -> None:
    assert "needs an NER model" in monitor_problem({"kinds": ["PERSON"]})
    package = monitor_problem({"kinds": ["PERSON"], "ner_model": "en_core_web_sm"})
    assert "is not a spaCy pipeline's folder" in package and "give its folder" in package
    model = save_model(tmp_path / "m")
    unused = monitor_problem({"kinds": ["EMAIL"], "ner_model": str(model)})
    assert "no kind it finds is masked" in unused


def test_a_model_whose_labels_no_masked_kind_maps_fails_synth(tmp_path: Path) -> None:
    # Deployed, the model loads in the function: a model that labels names PERS (and no
    # mapping for it) would fail every invocation after a deploy that took an image build.
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PERS", "pattern": "Jane"}])  # type: ignore[attr-defined]
    nlp.to_disk(tmp_path / "pers")
    problem = monitor_problem({"kinds": ["PERSON"], "ner_model": str(tmp_path / "pers")})
    assert "never labels an entity PER, PERSON" in problem and "its labels: PERS" in problem
    raw = copy.deepcopy(cdk_json_context()["evalrunner"])
    pii = {
        "kinds": ["PERSON"],
        "ner_model": str(tmp_path / "pers"),
        "ner_labels": {"PERS": "PERSON"},
    }
    raw["monitor"] = {**copy.deepcopy(MONITOR), "pii": pii}
    assert load_config(raw).monitor is not None  # mapped, it deploys
