"""One run's models: loaded once, shared by every evaluator, on the best device there is.

The Score step makes one :class:`ModelHub` per run and binds it to each model evaluator, so
five evaluators that embed the same answer sentences load the encoder once and encode each
sentence once. A model that cannot be loaded is remembered as :class:`ModelUnavailable` and
reported once for the run, whichever evaluators asked for it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from evalrunner.models.locate import (
    INSTALL_MODELS,
    ModelRole,
    ModelSettings,
    ModelUnavailable,
    locate,
)
from evalrunner.models.scorers import BertScore, CausalLM, Classifier, PairScorer, TextEncoder

logger = logging.getLogger(__name__)

Device = Literal["auto", "cpu", "cuda", "mps"]
Precision = Literal["auto", "fp32", "fp16"]
T = TypeVar("T")

#: Detoxify's published checkpoints, by the name after 'detoxify/'.
DETOXIFY_TYPES = ("original", "unbiased", "multilingual", "original-small", "unbiased-small")


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
            raise ImportError(
                "the Score Lambda carries no model code: model metrics are scored by the GPU "
                "Batch job; deploy with batch_scoring.enabled and a min_items this run reaches"
            ) from exc
        raise ImportError(f"the model code is not installed: {INSTALL_MODELS}") from exc
    return torch


class ModelHub:
    """Loads models by name or path, caches them for the run and reports what is missing."""

    def __init__(
        self,
        *,
        device: Device = "auto",
        precision: Precision = "auto",
        batch_size: int = 64,
        model_settings: ModelSettings | None = None,
    ) -> None:
        self._device, self._precision, self.batch_size = device, precision, batch_size
        #: Where models are found and each role's default, read once: the run's settings
        #: (:func:`~evalrunner.pipeline.context.hub_for`), else this process's environment.
        self.model_settings = ModelSettings.from_env() if model_settings is None else model_settings
        self._loaded: dict[tuple[str, str], Any] = {}
        self._failed: dict[tuple[str, str], ModelUnavailable] = {}
        #: Missing models by name, each with the evaluators that needed it (reported once).
        self.unavailable: dict[str, tuple[ModelUnavailable, list[str]]] = {}
        #: Missing models whose evaluators the run's judge scored instead: model name ->
        #: (why it is missing, evaluator -> the judge model that scored it).
        self.judged_instead: dict[str, tuple[ModelUnavailable, dict[str, str]]] = {}
        #: model name -> where it was loaded from and how, for the run's report.
        self.used: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ device and dtype

    @property
    def device(self) -> str:
        if self._device != "auto":
            return self._device
        try:
            torch = _torch()
        except ImportError:
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"

    @property
    def fp16(self) -> bool:
        """Half precision on CUDA (twice the throughput, same rankings); fp32 on CPU, where
        half precision is slower and less accurate."""
        if self._precision == "auto":
            return self.device == "cuda"
        return self._precision == "fp16"

    # ------------------------------------------------------------------ loading

    def _get(
        self,
        kind: str,
        name: str,
        role: ModelRole,
        build: Callable[[Path], T],
        path: Path | None = None,
    ) -> T:
        key = (kind, name)
        if key in self._loaded:
            # the kind in the key fixes the type: each kind is built by one builder of T
            return cast(T, self._loaded[key])
        if key in self._failed:
            raise self._failed[key]
        started = time.perf_counter()
        try:
            _torch()
            path = path or locate(name, role, self.model_settings.models_dir)
            model = build(path)
        except ModelUnavailable as exc:
            self._failed[key] = exc
            raise
        except ImportError as exc:
            self._failed[key] = ModelUnavailable(name, role, str(exc))
            raise self._failed[key] from exc
        except Exception as exc:  # present but unloadable: say so, never crash the run
            self._failed[key] = ModelUnavailable(
                name,
                role,
                f"it could not be loaded ({type(exc).__name__}: {exc}); check that the folder "
                f"holds a complete {kind} model",
            )
            raise self._failed[key] from exc
        self._loaded[key] = model
        self.used[name] = {
            "role": str(role),
            "path": str(path),
            "device": self.device,
            "precision": "fp16" if self.fp16 and kind != "bertscore" else "fp32",
            "load_seconds": round(time.perf_counter() - started, 2),
        }
        logger.info("loaded %s model %s from %s on %s", role, name, path, self.device)
        return model

    def _half(self, module: Any) -> Any:
        return module.half() if self.fp16 else module

    def encoder(self, name: str, role: ModelRole = ModelRole.EMBEDDING) -> TextEncoder:
        def build(path: Path) -> TextEncoder:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
            return TextEncoder(self._half(model), name=name, batch_size=self.batch_size)

        return self._get("sentence-transformers", name, role, build)

    def cross_encoder(self, name: str, role: ModelRole) -> PairScorer:
        def build(path: Path) -> PairScorer:
            if _has_remote_code(path):
                return PairScorer(self._remote_pair_model(path), name=name, batch_size=8)
            from sentence_transformers import CrossEncoder

            model = CrossEncoder(str(path), device=self.device, local_files_only=True)
            return PairScorer(self._half(model), name=name, batch_size=self.batch_size)

        return self._get("cross-encoder", name, role, build)

    def _remote_pair_model(self, path: Path) -> Any:
        """A pair classifier that ships its own code and ``predict(pairs)`` (Vectara's HHEM,
        which wraps each pair in its prompt template and loads its own tokenizer); it is
        baked into the image deliberately, so its code is trusted when found locally."""
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained(
            str(path), trust_remote_code=True, local_files_only=True
        )
        return _PredictAdapter(self._half(model.to(self.device)).eval())

    def classifier(self, name: str, role: ModelRole = ModelRole.TOXICITY) -> Classifier:
        """A detoxify model: 'detoxify/<type>' (from the torch hub cache, as the GPU image
        bakes it), a checkpoint file, or a folder holding a checkpoint (*.ckpt) next to the
        Hugging Face config and tokenizer files it was trained from."""

        def build(path: Path) -> Classifier:
            from detoxify import Detoxify

            if path.is_dir():
                checkpoints = sorted(path.glob("*.ckpt"))
                if not checkpoints:
                    raise FileNotFoundError(f"no detoxify checkpoint (*.ckpt) in {path}")
                checkpoint, config_dir = checkpoints[0], path
            else:
                checkpoint, config_dir = path, path.parent
            hf_config = str(config_dir) if (config_dir / "config.json").is_file() else None
            model = Detoxify(
                checkpoint=str(checkpoint), device=self.device, huggingface_config_path=hf_config
            )
            model.model = self._half(model.model)
            return Classifier(model, name=name, batch_size=self.batch_size)

        model_type = name.removeprefix("detoxify/")
        if name.startswith("detoxify/") and model_type in DETOXIFY_TYPES:
            cached = _detoxify_checkpoint(model_type)
            if cached is not None:
                return self._get("detoxify", name, role, build, path=cached)
        return self._get("detoxify", name, role, build)

    def causal_lm(self, name: str, role: ModelRole = ModelRole.PERPLEXITY) -> CausalLM:
        def build(path: Path) -> CausalLM:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
            # transformers types ``to`` through a decorator that loses the bound self
            model = self._half(model.to(self.device)).eval()  # type: ignore[arg-type]
            return CausalLM(model, tokenizer, name=name, batch_size=max(1, self.batch_size // 4))

        return self._get("causal-lm", name, role, build)

    def bertscore(
        self, name: str, num_layers: int | None = None, role: ModelRole = ModelRole.BERTSCORE
    ) -> BertScore:
        def build(path: Path) -> BertScore:
            from bert_score import BERTScorer
            from bert_score.utils import model2layers

            layers = (
                num_layers
                or model2layers.get(name)
                or model2layers.get(name.rsplit("/", 1)[-1])
                or _layer_count(path)
            )
            scorer = BERTScorer(
                model_type=str(path),
                num_layers=layers,
                batch_size=self.batch_size,
                device=self.device,
            )
            return BertScore(scorer, name=name)

        return self._get(f"bertscore-{num_layers}", name, role, build)

    # ------------------------------------------------------------------ reporting

    def report(self, exc: ModelUnavailable, evaluator: str) -> None:
        """Remember that ``evaluator`` was skipped for want of ``exc.model`` (once per model)."""
        _, names = self.unavailable.setdefault(exc.model, (exc, []))
        if evaluator not in names:
            names.append(evaluator)

    def report_judged(self, exc: ModelUnavailable, evaluator: str, judge: str) -> None:
        """Remember that ``evaluator``, for want of ``exc.model``, was scored by the run's
        judge ``judge`` instead (said once per model, at run level, as a skipped one is)."""
        _, judged = self.judged_instead.setdefault(exc.model, (exc, {}))
        judged[evaluator] = judge

    def notices(self) -> list[dict[str, Any]]:
        """One entry per missing model: which, for which evaluators (skipped, or ``judged``
        by the run's judge instead: evaluator -> judge model), and how to provide it."""
        out = []
        for model in dict.fromkeys([*self.unavailable, *self.judged_instead]):
            skipped = self.unavailable.get(model)
            judged = self.judged_instead.get(model)
            exc = skipped[0] if skipped else judged[0] if judged else None
            assert exc is not None  # the model is in one of the two
            out.append(
                {
                    "model": model,
                    "role": exc.role,
                    "evaluators": skipped[1] if skipped else [],
                    "judged": judged[1] if judged else {},
                    "message": exc.message,
                    "how": exc.how,
                }
            )
        return out

    def classifier_present(self, name: str) -> bool:
        """Whether :meth:`classifier` would find the detoxify model ``name`` on this machine,
        found without loading it (the estimate asks, to count the judge calls a run makes
        when it is missing)."""
        if importlib.util.find_spec("detoxify") is None:
            return False
        model_type = name.removeprefix("detoxify/")
        if name.startswith("detoxify/") and model_type in DETOXIFY_TYPES:
            if _detoxify_checkpoint(model_type) is not None:
                return True
        try:
            locate(name, ModelRole.TOXICITY, self.model_settings.models_dir)
        except ModelUnavailable:
            return False
        return True

    def stats(self) -> dict[str, Any]:
        counters = {
            f"{kind}:{name}": model.counters.as_dict()
            for (kind, name), model in self._loaded.items()
            if hasattr(model, "counters")
        }
        return {"device": self.device, "models": self.used, "work": counters}


class _PredictAdapter:
    """Gives a model with its own ``predict(pairs) -> scores`` the CrossEncoder surface
    :class:`PairScorer` uses (one output per pair)."""

    num_labels = 1

    def __init__(self, model: Any) -> None:
        self.model, self.config = model, model.config

    def predict(self, pairs: list[tuple[str, str]], **_: Any) -> Any:
        import numpy as np
        import torch

        with torch.inference_mode():
            scores = self.model.predict(pairs)
        if hasattr(scores, "detach"):
            scores = scores.detach().float().cpu().numpy()
        return np.asarray(scores, dtype=np.float32).reshape(len(pairs), 1)


def _has_remote_code(path: Path) -> bool:
    """Models such as Vectara's HHEM ship their own modelling code (config 'auto_map')."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "auto_map" in config


def _layer_count(path: Path) -> int:
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    return int(config.get("num_hidden_layers") or config.get("n_layer") or 1)


def _detoxify_checkpoint(model_type: str) -> Path | None:
    """The published checkpoint of a detoxify model type if the torch hub cache has it."""
    try:
        torch = _torch()
        from detoxify.detoxify import MODEL_URLS
    except ImportError:
        return None
    url = MODEL_URLS.get(model_type)
    if url is None:
        return None
    path = Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1]
    return path if path.is_file() else None


_TOOL_HUB: ModelHub | None = None
_TOOL_LOCK = threading.Lock()


def tool_encoder(name: str) -> TextEncoder:
    """An encoder for the work outside a run's Score step (``generate``, Aggregate's weak
    spots): one hub per process, so a second use loads nothing. Raises ModelUnavailable."""
    global _TOOL_HUB
    with _TOOL_LOCK:
        if _TOOL_HUB is None:
            _TOOL_HUB = ModelHub()
        return _TOOL_HUB.encoder(name)
