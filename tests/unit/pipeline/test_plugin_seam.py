"""A plugin metric crosses the steps of a run by name and module, not as an object: Prepare
writes the module into the run's configuration, and another process (a deployed RunCase
function) builds the metric from that configuration alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from tests.support.catalog import restored_catalog
from tests.support.suite_bucket import suite_store

REPO = Path(__file__).resolve().parents[3]
NOW = datetime(2026, 11, 23, tzinfo=UTC)

PLUGIN = """
import evalrunner


@evalrunner.metric(name="Shouted seam", threshold=1.0)
def shouted(sample):
    return evalrunner.Scored(float((sample.answer or "").isupper()), "all capitals?")
"""

OTHER_PROCESS = """
import json, sys
from evalrunner.evaluators import Requirement, Sample
from evalrunner.pipeline.context import RunContext
from evalrunner.run import RunConfig
from tests.support.suite_bucket import suite_store

config = RunConfig.model_validate(json.loads(sys.argv[1]))
assert not any(n.startswith("_evalrunner_plugin_") for n in sys.modules)
with suite_store(b"question\\nq\\n", bucket="other") as store:
    [metric] = RunContext(store, config).evaluators([Requirement.NOTHING])
    results = [metric.evaluate(Sample(question="q", answer=a)) for a in ("LOUD", "quiet")]
print(json.dumps([[r.model_dump() for r in rs] for rs in results]))
"""


def test_a_plugin_metric_is_built_in_another_process_from_the_run_config(tmp_path):
    plugin = tmp_path / "seam_metrics.py"
    plugin.write_text(PLUGIN, "utf-8")
    with restored_catalog():
        with suite_store(b"question,expected_answer\nQ?,A\n", bucket="seam") as store:
            raw = {
                "key": "test-suites/s.csv",
                "target": {"lambdaArn": "fn"},
                "iterations": 1,
                "run_id": "seam-run",
                "plugins": [str(plugin)],
                "metrics": ["Shouted seam"],
            }
            prepare.prepare_run(read_event(raw), store, now=NOW)
            config = store.get_json(store.run_key("seam-run"))

    assert config["plugins"] == [str(plugin.resolve())]
    assert config["metrics"] == ["Shouted seam"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, json.dumps(config)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    loud, quiet = json.loads(done.stdout)
    assert [(r["metric"], r["score"], r["success"]) for r in loud] == [("Shouted seam", 1.0, True)]
    assert [(r["score"], r["success"], r["reason"]) for r in quiet] == [
        (0.0, False, "all capitals?")
    ]
