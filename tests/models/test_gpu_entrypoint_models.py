"""The Batch path with real models: gpu_tasks/score_entrypoint.py on moto S3 scores a run's
model metrics, and a model that is not there is skipped and reported once."""

from __future__ import annotations

import json

import boto3
import numpy as np
import pytest
from moto import mock_aws
from sentence_transformers import SentenceTransformer

from evalrunner.event import read_event
from evalrunner.pipeline import aggregate, prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore
from gpu_tasks import score_entrypoint

BUCKET = "runner-bucket"
#: Answers and contexts computed elsewhere: the run needs no target.
SUITE = (
    "id,question,expected_answer,actual_answer,retrieved_contexts\n"
    'a,Where did the cat sit?,The cat sat on the mat.,The cat sat on the mat.,"[""The cat sat '
    'on the mat."", ""It was blue.""]"\n'
    'b,What is the capital?,Paris is the capital of France.,I love the sun.,"[""Paris is the '
    'capital of France.""]"\n'
    'c,Any dog?,No dog.,The dog hates water.,"[""A dog loves water!""]"\n'
)


@pytest.fixture
def run_on_s3(monkeypatch):
    """Prepare and run the cases of a run whose metrics come from the given options."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    def make(metrics, options):
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="test-suites/s.csv", Body=SUITE.encode())
        store = RunStore(BUCKET, client=s3)
        event = {
            "key": "test-suites/s.csv",
            "iterations": 2,
            "target": {"url": "http://unused.invalid/ask"},
            "metrics": metrics,
            "evaluator_options": options,
            "run_id": "gpu-models",
        }
        out = prepare.prepare_run(read_event(event), store)
        for item in store.get_json(out.manifest_key):
            run_case.run_case(RunContext.load(store, out.run_id), ManifestItem.model_validate(item))
        return store, out.run_id

    with mock_aws():
        yield make


def test_the_gpu_task_scores_model_metrics_and_reports_a_missing_model_once(
    run_on_s3, tiny_models, capsys
):
    encoder = str(tiny_models["encoder"])
    store, run_id = run_on_s3(
        ["Answer semantic similarity", "Groundedness", "Exact match"],
        {
            "Answer semantic similarity": {"model": encoder},
            "Groundedness": {"model": "BAAI/bge-small-en-v1.5"},
        },
    )

    assert score_entrypoint.main(["--run-id", run_id, "--bucket", BUCKET]) == 0

    scored = store.get_json(store.scores_key(run_id))
    assert len(scored["items"]) == 6  # 3 cases x 2 iterations
    model = SentenceTransformer(encoder, device="cpu")
    vectors = model.encode(["I love the sun.", "Paris is the capital of France."])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    b = {r["evaluator"]: r for r in scored["items"]["c00002-i2"]}
    assert b["Answer semantic similarity"]["status"] == "scored"
    assert b["Answer semantic similarity"]["score"] == pytest.approx(
        float(np.clip(vectors[0] @ vectors[1], 0, 1)), abs=1e-5
    )
    assert b["Groundedness"]["status"] == "skipped"
    (notice,) = scored["notices"]
    assert notice["model"] == "BAAI/bge-small-en-v1.5" and notice["evaluators"] == ["Groundedness"]
    assert scored["models"]["models"][encoder]["device"] == "cpu"
    assert scored["models"]["by_evaluator"] == {
        "Answer semantic similarity": encoder,
        "Groundedness": "BAAI/bge-small-en-v1.5",
    }
    work = scored["models"]["work"][f"sentence-transformers:{encoder}"]
    assert work["computed"] < work["requested"]  # the second iteration's texts were cached

    log = capsys.readouterr().out
    assert '"models_unavailable": ["BAAI/bge-small-en-v1.5"]' in log

    summary = aggregate.aggregate_run(RunContext.load(store, run_id))
    model_problems = [p for p in summary.problems if p.type == "model_unavailable"]
    assert len(model_problems) == 1
    assert model_problems[0].severity == "high"
    assert "Groundedness skipped" in model_problems[0].description
    assert "hf download BAAI/bge-small-en-v1.5" in model_problems[0].suggested_action
    by_metric = {m.metric: m for m in summary.metrics}
    assert by_metric["Groundedness"].skipped == 6 and by_metric["Groundedness"].count == 0
    assert by_metric["Answer semantic similarity"].count == 6
    assert summary.models is not None and summary.models.device == "cpu"
    report = json.loads(store.get_bytes(summary.reports.report))
    models = {m["metric"]: m["model"] for m in report["metrics"]}
    assert models["Answer semantic similarity"] == encoder  # regressions compare like with like
    assert models["Exact match"] is None


def test_the_image_defaults_come_from_the_models_file(
    run_on_s3, tiny_models, tmp_path, monkeypatch
):
    """The GPU image names its baked models in gpu_tasks/models.json; runs that name no model
    use them."""
    models_file = tmp_path / "models.json"
    models_file.write_text(json.dumps({"defaults": {"embedding": str(tiny_models["encoder"])}}))
    monkeypatch.setenv("EVALRUNNER_MODELS_FILE", str(models_file))
    store, run_id = run_on_s3(["Groundedness"], {})

    assert score_entrypoint.main(["--run-id", run_id, "--bucket", BUCKET]) == 0

    scored = store.get_json(store.scores_key(run_id))
    assert scored["notices"] == []
    assert list(scored["models"]["models"]) == [str(tiny_models["encoder"])]
    statuses = {r["status"] for rs in scored["items"].values() for r in rs}
    assert statuses == {"scored"}


def test_the_repository_models_file_names_the_cloud_defaults():
    from pathlib import Path

    defaults = json.loads((Path(score_entrypoint.__file__).parent / "models.json").read_text())[
        "defaults"
    ]
    assert defaults["embedding"] == "BAAI/bge-small-en-v1.5"
    assert defaults["perplexity"] == "distilbert/distilgpt2"
    assert defaults["toxicity"] == "detoxify/original"
    assert defaults["bertscore"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "hallucination" in defaults and "nli" in defaults
