"""Score: the model work of the whole run at once (embeddings, cross-encoders, ...).

Evaluators that declare ``Requirement.GPU_BATCH`` are not run per case: their samples are
collected here across every case, so texts can be deduplicated and batched. This module is the
in-process path (local runs, small runs); the GPU task runs the same function in its container.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalrunner.evaluators import BatchEvaluator, MetricResult, Requirement
from evalrunner.evaluators.model_base import ModelEvaluator
from evalrunner.models import ModelHub
from evalrunner.pipeline.run_case import build_evaluators, load_config, sample_of
from evalrunner.run import CaseRecord, ManifestItem, ModelNotice, ModelsUsed, ScoresFile
from evalrunner.storage import RunStore

BATCHED = (Requirement.GPU_BATCH,)

#: Where the model work runs: auto (CUDA when present), cpu, cuda; and the batch size.
ENV_DEVICE = "EVALRUNNER_DEVICE"
ENV_BATCH_SIZE = "EVALRUNNER_BATCH_SIZE"


def run_hub() -> ModelHub:
    """The run's one model hub, configured from the environment (the GPU job definition
    sets it; locally the defaults pick CUDA when there is one)."""
    device = os.environ.get(ENV_DEVICE) or "auto"
    batch_size = int(os.environ.get(ENV_BATCH_SIZE) or 64)
    return ModelHub(device=device, batch_size=batch_size)  # type: ignore[arg-type]


def load_records(
    store: RunStore, run_id: str, items: list[ManifestItem]
) -> list[CaseRecord | None]:
    """Every item's record (None where the case left none), read in parallel."""

    def one(item: ManifestItem) -> CaseRecord | None:
        raw = store.get_json_or_none(store.record_key(run_id, item.item_id))
        return CaseRecord.model_validate(raw) if raw is not None else None

    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(one, items))


def load_manifest(store: RunStore, run_id: str) -> list[ManifestItem]:
    return [ManifestItem.model_validate(i) for i in store.get_json(store.manifest_key(run_id))]


def score_run(store: RunStore, run_id: str, *, hub: ModelHub | None = None) -> dict[str, Any]:
    """Score every batched evaluator of the run over all its answered cases and write
    ``runs/<run_id>/scores.json`` (a :class:`~evalrunner.run.ScoresFile`): ``items`` (item
    id -> results), ``notices`` (models that are not available, once each, with how to
    provide them) and ``models`` (what was loaded, where, on which device, and how much work
    the caches saved)."""
    config = load_config(store, run_id)
    evaluators = [e for e in build_evaluators(config, BATCHED) if isinstance(e, BatchEvaluator)]
    if not evaluators:
        store.put_json(store.scores_key(run_id), ScoresFile().model_dump(mode="json"))
        return {"evaluators": [], "samples": 0}
    hub = hub or run_hub()
    for evaluator in evaluators:
        if isinstance(evaluator, ModelEvaluator):
            evaluator.models = hub
    items = load_manifest(store, run_id)
    records = load_records(store, run_id, items)
    ready = [
        (item, record)
        for item, record in zip(items, records, strict=True)
        if record is not None and record.status == "ok" and record.response is not None
    ]
    samples = [
        sample_of(item.case, record.response, config.max_text_chars)
        for item, record in ready
    ]
    scores: dict[str, list[MetricResult]] = {item.item_id: [] for item, _ in ready}
    for evaluator in evaluators:
        for (item, _), results in zip(ready, evaluator.evaluate_batch(samples), strict=True):
            scores[item.item_id].extend(results)
    notices = [ModelNotice.model_validate(n) for n in hub.notices()]
    used = {
        e.name: ", ".join(dict.fromkeys(e.models_used()))
        for e in evaluators
        if isinstance(e, ModelEvaluator)
    }
    models = ModelsUsed.model_validate({**hub.stats(), "by_evaluator": used})
    scored = ScoresFile(items=scores, notices=notices, models=models)
    store.put_json(store.scores_key(run_id), scored.model_dump(mode="json"))
    out: dict[str, Any] = {"evaluators": [e.name for e in evaluators], "samples": len(samples)}
    if notices:
        out["models_unavailable"] = [n.model for n in notices]
    return out
