"""Score: the model work of the whole run at once (embeddings, cross-encoders, ...).

Evaluators that declare ``Requirement.GPU_BATCH`` are not run per case: their samples are
collected here across every case, so texts can be deduplicated and batched. Per-case
evaluators with a model part (:class:`~evalrunner.evaluators.score_part.ScoreStepPart`: the
judge metrics' similarity parts) have that part recomputed here, with the same hub. This
module is the in-process path (local runs, small runs); the GPU task runs the same function in
its container.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import islice

from pydantic import TypeAdapter

from evalrunner.evaluators import BatchEvaluator, MetricResult, Requirement, resolve
from evalrunner.evaluators.model_base import ModelEvaluator
from evalrunner.evaluators.score_part import ScoreStepPart
from evalrunner.judge.base import CURRENT_CASE, CaseUsage
from evalrunner.pipeline.context import RunContext
from evalrunner.pipeline.conversations import flatten
from evalrunner.pipeline.scoring import sample_of
from evalrunner.run import (
    CaseRecord,
    ManifestItem,
    ModelNotice,
    ModelsUsed,
    ScoreReply,
    ScoresFile,
)
from evalrunner.storage import RunStore

BATCHED = (Requirement.GPU_BATCH,)


#: Records read and parsed at a time by :func:`iter_records`: enough to keep 16 readers busy,
#: few enough that a run of any size holds only this many parsed records at once.
RECORD_CHUNK = 256
#: Records read at once by :func:`iter_records` (S3 answers each read in tens of ms).
_READERS = 16


def load_records(
    store: RunStore, run_id: str, items: list[ManifestItem]
) -> list[CaseRecord | None]:
    """Every item's record (None where the case left none), read in parallel. Holds every
    record at once (a parsed record takes some 15 KB): a step that only folds the records
    into smaller figures reads them with :func:`iter_records` instead."""
    return [record for _, record in iter_records(store, run_id, items)]


def iter_records(
    store: RunStore, run_id: str, items: Iterable[ManifestItem], chunk: int = RECORD_CHUNK
) -> Iterator[tuple[ManifestItem, CaseRecord | None]]:
    """Each item with its record (None where the case left none), in manifest order, read in
    parallel ``chunk`` at a time: the next chunk is read only once the caller has taken the
    last one, so a caller that keeps nothing of a record holds at most one chunk of them."""

    def some(part: list[ManifestItem]) -> list[CaseRecord | None]:
        out: list[CaseRecord | None] = []
        for item in part:
            raw = store.get_bytes_or_none(store.record_key(run_id, item.item_id))
            # pydantic parses the JSON itself: half the CPU of json.loads and validating the
            # dict (~19 vs ~38 µs a record), the same record (records are strict JSON)
            out.append(CaseRecord.model_validate_json(raw) if raw is not None else None)
        return out

    readers = min(_READERS, store.readers)
    pending = iter(items)
    if readers == 1:  # an in-process store: its reads are CPU, read in turn (RunStore.readers)
        while batch := list(islice(pending, chunk)):
            yield from zip(batch, some(batch), strict=True)
        return
    with ThreadPoolExecutor(max_workers=readers) as pool:
        while batch := list(islice(pending, chunk)):
            # One task per reader, each reading its share in turn, not one task per record:
            # as many reads in flight, and a future, its locks and a thread hand-over per
            # reader instead of per record (with an in-process store the reads are CPU, and
            # that hand-over cost as much as reading and parsing the record).
            size = -(-len(batch) // readers)
            parts = [batch[i : i + size] for i in range(0, len(batch), size)]
            for part, records in zip(parts, pool.map(some, parts), strict=True):
                yield from zip(part, records, strict=True)


def _loaded(store: RunStore, run_id: str) -> tuple[list[ManifestItem], list[CaseRecord | None]]:
    items = load_manifest(store, run_id)
    return items, load_records(store, run_id, items)


@cache
def _manifest_adapter() -> TypeAdapter[list[ManifestItem]]:
    return TypeAdapter(list[ManifestItem])


def load_manifest(store: RunStore, run_id: str) -> list[ManifestItem]:
    """The run's items, parsed by pydantic from the manifest's bytes (strict JSON, as Prepare
    writes it): ~40% less CPU than ``json.loads`` and validating each dict, the same items."""
    return _manifest_adapter().validate_json(store.get_bytes(store.manifest_key(run_id)))


def score_run(context: RunContext) -> ScoreReply:
    """Score every batched evaluator of the run over all its answered cases and write
    ``runs/<run_id>/scores.json`` (a :class:`~evalrunner.run.ScoresFile`): ``items`` (item
    id -> results), ``notices`` (models that are not available, once each, with how to
    provide them) and ``models`` (what was loaded, where, on which device, and how much work
    the caches saved)."""
    store, config, run_id = context.store, context.config, context.run_id
    evaluators = [e for e in context.evaluators(BATCHED) if isinstance(e, BatchEvaluator)]
    parts = score_step_parts(context)
    if not evaluators and not parts:
        store.put_json(store.scores_key(run_id), ScoresFile().model_dump(mode="json"))
        return ScoreReply(evaluators=[], samples=0)
    # a conversation's turns are scored like cases; its own row has no model metric
    items, records = flatten(*_loaded(store, run_id))
    ready = [
        (item, record)
        for item, record in zip(items, records, strict=True)
        if record is not None
        and record.status == "ok"
        and record.response is not None
        and not item.case.is_conversation
    ]
    samples = [
        sample_of(item.case, record.response, config.max_text_chars) for item, record in ready
    ]
    scores: dict[str, list[MetricResult]] = {item.item_id: [] for item, _ in ready}
    # an evaluator whose model is missing may ask the run's judge instead (Toxicity): its
    # calls are the run's too, counted here as a case's are in run_case
    usage = CaseUsage()
    token = CURRENT_CASE.set(usage)
    try:
        for evaluator in evaluators:
            for (item, _), results in zip(ready, evaluator.evaluate_batch(samples), strict=True):
                scores[item.item_id].extend(results)
    finally:
        CURRENT_CASE.reset(token)
    hub = context.models  # what a model is, where it loaded, and what the caches saved
    cases = [(sample, record.results) for sample, (_, record) in zip(samples, ready, strict=True)]
    for part in parts:
        for (item, _), results in zip(ready, part.rescore_run(cases, hub), strict=True):
            scores[item.item_id].extend(results)
    notices = [ModelNotice.model_validate(n) for n in hub.notices()]
    used = {
        e.name: ", ".join(dict.fromkeys(e.models_used()))
        for e in evaluators
        if isinstance(e, ModelEvaluator)
    }
    used |= {p.name: ", ".join(p.score_step_models()) for p in parts if p.score_step_models()}
    models = ModelsUsed.model_validate({**hub.stats(), "by_evaluator": used})
    asked = usage.usage.calls + usage.usage.cached > 0
    scored = ScoresFile(
        items=scores,
        notices=notices,
        models=models,
        judge_usage=usage.usage.as_dict() if asked else None,
    )
    store.put_json(store.scores_key(run_id), scored.model_dump(mode="json"))
    names = [e.name for e in evaluators] + [p.name for p in parts]
    unavailable = [n.model for n in notices] or None
    return ScoreReply(evaluators=names, samples=len(samples), models_unavailable=unavailable)


def score_step_parts(context: RunContext) -> list[ScoreStepPart]:
    """The run's per-case evaluators whose scores the Score step recomputes. Built without
    the run's judge (the Score step never asks it): only their options and thresholds."""
    config = context.config
    built = (resolve(n)(config.thresholds, config.evaluator_options.get(n)) for n in config.metrics)
    return [e for e in built if isinstance(e, ScoreStepPart)]
