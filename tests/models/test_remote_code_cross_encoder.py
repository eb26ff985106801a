"""A pair model that ships its own code and ``predict`` (how Vectara's HHEM is published) is
loaded through transformers' remote-code path and scored through its own ``predict``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.hallucination import Hallucination
from evalrunner.models import ModelHub

CONFIGURATION = """
from transformers import PretrainedConfig


class TinyHHEMConfig(PretrainedConfig):
    model_type = "tinyhhem"
"""

MODELING = '''
import torch
from transformers import PreTrainedModel

from .configuration_tinyhhem import TinyHHEMConfig


class TinyHHEM(PreTrainedModel):
    """Consistency = share of hypothesis words found in the premise, scaled by a weight."""

    config_class = TinyHHEMConfig

    def __init__(self, config):
        super().__init__(config)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.post_init()

    def _init_weights(self, module):
        pass

    def predict(self, text_pairs):
        out = []
        for premise, hypothesis in text_pairs:
            words = hypothesis.lower().split()
            found = sum(w in premise.lower().split() for w in words) / max(1, len(words))
            out.append(found * float(self.scale))
        return torch.tensor(out)
'''


@pytest.fixture
def remote_model(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-hhem"
    folder.mkdir()
    (folder / "configuration_tinyhhem.py").write_text(CONFIGURATION)
    (folder / "modeling_tinyhhem.py").write_text(MODELING)
    config = {
        "model_type": "tinyhhem",
        "architectures": ["TinyHHEM"],
        "auto_map": {
            "AutoConfig": "configuration_tinyhhem.TinyHHEMConfig",
            "AutoModelForSequenceClassification": "modeling_tinyhhem.TinyHHEM",
        },
    }
    (folder / "config.json").write_text(json.dumps(config))
    import torch
    from safetensors.torch import save_file

    save_file({"scale": torch.tensor([0.5])}, str(folder / "model.safetensors"))
    return folder


def test_a_remote_code_model_is_scored_through_its_own_predict(remote_model):
    ev = Hallucination(options={"model": str(remote_model)}, models=ModelHub(device="cpu"))
    results = ev.evaluate_batch(
        [
            Sample(question="q", answer="the cat sat", contexts=["the cat sat on the mat"]),
            Sample(question="q", answer="the dog ran", contexts=["the cat sat on the mat"]),
        ]
    )
    scores = [rs[0].score for rs in results]
    # the saved weight (0.5) is loaded, not re-initialised: 0.5 x share of words found
    assert scores == pytest.approx([0.5, 0.5 * 1 / 3])
    assert ev.hub.notices() == []
