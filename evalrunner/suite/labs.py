"""An H2O test lab with several models' answers per case, split into one lab per model.

A lab answered by several models is a comparison: read as one suite it keeps one model's
answers per case (see ``json_suites._read_h2o_lab``). ``evalrunner run`` without ``--target``
instead scores each model's answers as its own run (the model's name as the target) and
puts the runs on a leaderboard, which is what the lab was built for.
"""

from __future__ import annotations

import json
from typing import Any

from evalrunner import input_limits
from evalrunner.suite.json_suites import lab_identity  # one definition of "the same case"


def split_lab(data: bytes) -> list[tuple[str, bytes]]:
    """``(model name, that model's lab as JSON)`` for each model of a lab in which some case
    was answered by two models or more, in the lab's model order; ``[]`` for anything else
    (not JSON, not a lab, one answer per case, answers not computed yet)."""
    if len(data) > input_limits.SuiteLimits.from_env().bytes:  # the CLI's limits
        return []  # read_suite refuses it, naming the limit
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        # RecursionError: json has no depth limit of its own; read_suite names the limit.
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("dataset"), dict):
        return []
    inputs = doc["dataset"].get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(i, dict) for i in inputs):
        return []
    answered: dict[str, set[Any]] = {}
    for item in inputs:
        answered.setdefault(lab_identity(item), set()).add(item.get("model_key"))
    if all(len(models) < 2 for models in answered.values()):
        return []
    models = [m for m in doc.get("models") or [] if isinstance(m, dict)]
    names = {m.get("key"): m.get("llm_model_name") or m.get("name") for m in models}
    keys = list(
        dict.fromkeys([*(m.get("key") for m in models), *(i.get("model_key") for i in inputs)])
    )
    out: list[tuple[str, bytes]] = []
    for key in keys:
        rows = [i for i in inputs if i.get("model_key") == key]
        if not rows:
            continue
        one = {
            **doc,
            "dataset": {**doc["dataset"], "inputs": rows},
            "models": [m for m in models if m.get("key") == key],
        }
        one.pop("raw_dataset", None)
        out.append((str(names.get(key) or key or "model"), json.dumps(one).encode("utf-8")))
    return out
