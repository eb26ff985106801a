"""A plugin metric crosses the steps of a run by name and module, not as an object: Prepare
writes the module into the run's configuration, and another process (a deployed RunCase
function) builds the metric from that configuration alone."""

from __future__ import annotations

from tests.support.seam import in_fresh_process, prepared_config

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
    config = prepared_config(
        {"target": {"lambdaArn": "fn"}, "plugins": [str(plugin)], "metrics": ["Shouted seam"]}
    )

    assert config["plugins"] == [str(plugin.resolve())]
    assert config["metrics"] == ["Shouted seam"]
    loud, quiet = in_fresh_process(OTHER_PROCESS, config)
    assert [(r["metric"], r["score"], r["success"]) for r in loud] == [("Shouted seam", 1.0, True)]
    assert [(r["score"], r["success"], r["reason"]) for r in quiet] == [
        (0.0, False, "all capitals?")
    ]
