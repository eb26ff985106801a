"""gpu_tasks/score_entrypoint.py, as the Batch job runs it, against moto S3."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from evalrunner.event import read_event
from evalrunner.pipeline import prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore
from gpu_tasks import score_entrypoint

from . import batch_helpers
from .batch_helpers import METRICS, SUITE, LengthRatio

BUCKET = "runner-bucket"


@pytest.fixture
def prepared(monkeypatch):
    """A run whose cases are done: what the Score step finds."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("EVALRUNNER_RUN_ID", raising=False)
    monkeypatch.delenv("EVALRUNNER_BUCKET", raising=False)
    batch_helpers.register()
    try:
        with mock_aws():
            s3 = boto3.client("s3", region_name="us-east-1")
            s3.create_bucket(Bucket=BUCKET)
            s3.put_object(Bucket=BUCKET, Key="test-suites/s.csv", Body=SUITE)
            store = RunStore(BUCKET, client=s3)
            event = {
                "key": "test-suites/s.csv",
                "iterations": 2,
                "target": {"url": "http://unused.invalid/ask"},
                "metrics": METRICS,
                "run_id": "gpu-run",
            }
            out = prepare.prepare_run(read_event(event), store)
            for item in store.get_json(out.manifest_key):
                run_case.run_case(
                    RunContext.load(store, out.run_id), ManifestItem.model_validate(item)
                )
            yield store, out.run_id
    finally:
        batch_helpers.unregister()


def test_scores_the_run_named_by_the_container_environment(prepared, monkeypatch, capsys):
    store, run_id = prepared
    monkeypatch.setenv("EVALRUNNER_RUN_ID", run_id)
    monkeypatch.setenv("EVALRUNNER_BUCKET", BUCKET)

    assert score_entrypoint.main([]) == 0

    scores = store.get_json(store.scores_key(run_id))["items"]
    assert len(scores) == 6  # 3 cases x 2 iterations, in one batch
    assert LengthRatio.batches == [6]
    results = scores["c00002-i1"]
    assert results[0]["metric"] == "Length ratio"
    assert results[0]["score"] == pytest.approx(len("gamma delta epsilon") / len("gamma"))
    log = capsys.readouterr().out
    assert '"message": "run scored"' in log and '"samples": 6' in log
    assert '"device": "' in log


def test_options_win_over_the_environment(prepared, monkeypatch):
    store, run_id = prepared
    monkeypatch.setenv("EVALRUNNER_RUN_ID", "some-other-run")
    monkeypatch.setenv("EVALRUNNER_BUCKET", "some-other-bucket")
    assert score_entrypoint.main(["--run-id", run_id, "--bucket", BUCKET]) == 0
    assert store.get_json(store.scores_key(run_id))


def test_a_run_that_cannot_be_scored_exits_1_with_the_reason(prepared, capsys):
    assert score_entrypoint.main(["--run-id", "no-such-run", "--bucket", BUCKET]) == 1
    err = capsys.readouterr().err
    assert "runs/no-such-run/run.json does not exist" in err


def test_missing_run_id_and_bucket_exit_2(prepared, capsys):
    with pytest.raises(SystemExit) as info:
        score_entrypoint.main([])
    assert info.value.code == 2
    assert "--run-id (or $EVALRUNNER_RUN_ID) and --bucket" in capsys.readouterr().err


def test_the_dockerfile_runs_this_module():
    from pathlib import Path

    dockerfile = (Path(score_entrypoint.__file__).parent / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["python", "-m", "gpu_tasks.score_entrypoint"]' in dockerfile
    assert 'pip install ".[models]"' in dockerfile  # torch lives here, not in the Lambdas


def test_the_image_bakes_every_model_of_models_json_once():
    from gpu_tasks import fetch_models

    fetches = fetch_models.plan()
    hub = [f.name for f in fetches if f.kind == "hub"]
    assert "BAAI/bge-small-en-v1.5" in hub and "distilbert/distilgpt2" in hub
    assert "google/flan-t5-base" in hub  # HHEM's own tokenizer, loaded by its code
    assert [f.name for f in fetches if f.kind == "detoxify"] == ["original"]
    assert len(hub) == len(set(hub))
    # BERTScore uses the packaged MiniLM in the image too: same numbers as on a laptop
    assert "sentence-transformers/all-MiniLM-L6-v2" not in hub

    calls: list[tuple[str, str]] = []
    fetch_models.fetch(
        fetches,
        hub=lambda name: calls.append(("hub", name)),
        detoxify=lambda name: calls.append(("detoxify", name)),
    )
    assert calls == [(f.kind, f.name) for f in fetches]


def test_the_dockerfile_fetches_models_at_build_and_runs_offline():
    from pathlib import Path

    dockerfile = (Path(score_entrypoint.__file__).parent / "Dockerfile").read_text()
    fetch = dockerfile.index("RUN python -m gpu_tasks.fetch_models gpu_tasks/models.json")
    assert fetch < dockerfile.index("COPY evalrunner ./evalrunner")  # code edits keep models
    assert dockerfile.index("HF_HUB_OFFLINE=1") > fetch  # offline only after the download
    assert "EVALRUNNER_MODELS_FILE=/opt/evalrunner/gpu_tasks/models.json" in dockerfile
