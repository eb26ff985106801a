"""Where models are found, which one a role uses, and what is said when one is missing."""

from __future__ import annotations

import json
import sys

import pytest

from evalrunner.errors import EvalRunnerError
from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.semantic import Groundedness
from evalrunner.models import ModelHub, ModelRole, ModelUnavailable, default_model, locate
from evalrunner.models.locate import LOCAL_DEFAULTS, PACKAGED_MINILM, dir_name


@pytest.fixture(autouse=True)
def _clean(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("EVALRUNNER_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("EVALRUNNER_MODELS_FILE", raising=False)
    for role in ModelRole:
        monkeypatch.delenv(f"EVALRUNNER_MODEL_{role.value.upper()}", raising=False)


def test_a_path_is_used_as_is(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert locate(str(folder), ModelRole.EMBEDDING) == folder


def test_a_missing_path_says_to_fix_the_option(tmp_path):
    with pytest.raises(ModelUnavailable) as info:
        locate(str(tmp_path / "nope"), ModelRole.EMBEDDING)
    assert "does not exist; fix the 'model' option" in info.value.message


def test_hub_names_are_found_in_the_models_dir(tmp_path):
    stored = tmp_path / "models" / dir_name("BAAI/bge-small-en-v1.5")
    stored.mkdir(parents=True)
    assert stored.name == "BAAI--bge-small-en-v1.5"
    assert locate("BAAI/bge-small-en-v1.5", ModelRole.EMBEDDING) == stored


def test_an_absent_hub_name_says_how_to_provide_it(tmp_path):
    with pytest.raises(ModelUnavailable) as info:
        locate("BAAI/bge-small-en-v1.5", "embedding")
    message = info.value.message
    assert message.startswith("embedding model 'BAAI/bge-small-en-v1.5' is not available")
    assert "never downloads" in message
    assert str(tmp_path / "models" / "BAAI--bge-small-en-v1.5") in message
    assert "gpu_tasks/models.json" in message


def test_the_packaged_minilm_is_the_local_default_embedding_and_bertscore_backbone():
    assert default_model(ModelRole.EMBEDDING) == PACKAGED_MINILM
    assert default_model(ModelRole.BERTSCORE) == PACKAGED_MINILM
    assert set(LOCAL_DEFAULTS) == set(ModelRole)


def test_defaults_come_from_the_environment_then_the_models_file(monkeypatch, tmp_path):
    models_file = tmp_path / "models.json"
    models_file.write_text(json.dumps({"defaults": {"embedding": "from/file", "nli": "n/li"}}))
    monkeypatch.setenv("EVALRUNNER_MODELS_FILE", str(models_file))
    assert default_model(ModelRole.EMBEDDING) == "from/file"
    assert default_model(ModelRole.PERPLEXITY) == LOCAL_DEFAULTS[ModelRole.PERPLEXITY]
    monkeypatch.setenv("EVALRUNNER_MODEL_EMBEDDING", "from/env")
    assert default_model(ModelRole.EMBEDDING) == "from/env"


def test_an_unreadable_models_file_is_a_clear_error(monkeypatch, tmp_path):
    bad = tmp_path / "models.json"
    bad.write_text("{not json")
    monkeypatch.setenv("EVALRUNNER_MODELS_FILE", str(bad))
    with pytest.raises(EvalRunnerError, match=r"EVALRUNNER_MODELS_FILE .* is not a readable JSON"):
        default_model(ModelRole.EMBEDDING)


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError


def test_without_the_models_extra_model_evaluators_are_skipped_with_the_install_command(
    no_torch,
):
    hub = ModelHub()
    evaluator = Groundedness(models=hub)
    results = evaluator.evaluate_batch(
        [Sample(question="q", answer="a b.", contexts=["a b."]) for _ in range(2)]
    )
    assert [r.status for rs in results for r in rs] == ["skipped", "skipped"]
    (notice,) = hub.notices()
    assert "pip install 'evalrunner[models]'" in notice["message"]
    assert notice["evaluators"] == ["Groundedness"]
    with pytest.raises(ModelUnavailable):  # remembered: not retried per evaluator
        hub.encoder(PACKAGED_MINILM)


def test_in_the_score_lambda_the_message_points_at_the_gpu_job(no_torch, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "evalrunner-score")
    with pytest.raises(ModelUnavailable) as info:
        ModelHub().encoder(PACKAGED_MINILM)
    assert "Score Lambda carries no model code" in info.value.message
    assert "batch_scoring" in info.value.message


def test_a_runs_models_come_from_its_settings_not_the_environment_now(monkeypatch, tmp_path):
    # read once into the run's settings; the hub made from them, and the evaluators using
    # that hub, look nowhere else (the environment changes after: it does not count)
    from evalrunner.pipeline.context import Settings, hub_for
    from evalrunner.reports.analysis.weakness import question_embedder

    settings = Settings.from_env(
        {
            "EVALRUNNER_MODELS_DIR": str(tmp_path / "settings-models"),
            "EVALRUNNER_MODEL_EMBEDDING": "from/settings",
        }
    )
    monkeypatch.setenv("EVALRUNNER_MODELS_DIR", str(tmp_path / "environment-models"))
    monkeypatch.setenv("EVALRUNNER_MODEL_EMBEDDING", "from/environment")
    hub = hub_for(settings)
    assert Groundedness(models=hub).model_name() == "from/settings"
    assert Groundedness(options={"model": "mine"}, models=hub).model_name() == "mine"
    with pytest.raises(ModelUnavailable) as caught:
        hub.encoder("BAAI/bge-small-en-v1.5")
    assert str(tmp_path / "settings-models" / "BAAI--bge-small-en-v1.5") in caught.value.how
    assert "environment-models" not in caught.value.how
    _, method = question_embedder([], "auto", settings.model_settings)
    assert "from/settings" in method and "from/environment" not in method


def test_a_bad_models_file_in_the_settings_fails_only_a_run_asking_for_a_default(tmp_path):
    from evalrunner.pipeline.context import Settings, hub_for

    bad = tmp_path / "models.json"
    bad.write_text("{not json")
    settings = Settings.from_env({"EVALRUNNER_MODELS_FILE": str(bad)})  # does not fail
    hub = hub_for(settings)
    assert Groundedness(options={"model": "mine"}, models=hub).model_name() == "mine"
    with pytest.raises(EvalRunnerError, match=r"EVALRUNNER_MODELS_FILE .* is not a readable JSON"):
        Groundedness(models=hub).model_name()
