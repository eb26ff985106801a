"""The monitor function as a container image, for a monitor that masks personal names
(cdk.json ``monitor.pii.ner_model``).

Names need an NER model run by spaCy (the ``ner`` extra): spaCy with thinc and blis is
~200 MB installed, and the zip Lambda's 250 MB (unzipped, code and layers together) is half
taken by the dependencies layer, so a function with both cannot be deployed as a zip. A
container image may be 10 GB: this one is the AWS Lambda Python base image with the core
dependencies and the extra's pins (from ``pyproject.toml``, as the layer is), the functions'
code, the cdk.json plugins, and the model folder at :data:`MODEL_IN_IMAGE`. Only the monitor
function becomes an image; the pipeline's functions keep the zip and the layer.

``cdk synth`` only stages the folder the image is built from (no Docker, no network);
``cdk deploy`` builds and pushes it, so the deploying machine needs Docker and must reach
PyPI and the base image's registry.
"""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The base image: AWS's Lambda runtime image of the layer's Python (lambda_package.py).
BASE_IMAGE = "public.ecr.aws/lambda/python:3.12"
#: Where the image's task root holds the model (``EVALRUNNER_MONITOR_PII``'s ner_model).
MODEL_IN_IMAGE = "/var/task/ner-model"
#: The handler the image runs.
HANDLER = "lambdas.monitor.handler"

DOCKERFILE = f"""\
# The evalrunner monitor with personal-name masking (infra/ner_image.py): staged by cdk
# synth, built by cdk deploy.
FROM {BASE_IMAGE}
COPY requirements.txt ${{LAMBDA_TASK_ROOT}}/requirements.txt
RUN pip install --no-cache-dir -r ${{LAMBDA_TASK_ROOT}}/requirements.txt
COPY code/ ${{LAMBDA_TASK_ROOT}}/
COPY ner-model/ {MODEL_IN_IMAGE}/
CMD ["{HANDLER}"]
"""


def image_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The core dependencies (the layer's) and the ``ner`` extra's pins, in pyproject order."""
    project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["ner"]]


def stage_image(
    root: Path, model: Path, code_packages: Sequence[str], plugins: Sequence[Path]
) -> Path:
    """Write the folder the image is built from into ``root``: the Dockerfile, the pinned
    requirements, the code (``code_packages`` and the ``plugins``) and the model folder."""
    from infra.parts.functions import stage_code

    root.mkdir(parents=True, exist_ok=True)
    (root / "Dockerfile").write_text(DOCKERFILE, "utf-8")
    (root / "requirements.txt").write_text("".join(f"{r}\n" for r in image_requirements()))
    stage_code(root / "code", code_packages, plugins)
    shutil.copytree(model, root / "ner-model", ignore=shutil.ignore_patterns("__pycache__"))
    return root
