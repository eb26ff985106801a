"""A named judge metric crosses the steps of a run as its declaration: Prepare writes it into
the run's configuration, and another process (a deployed RunCase function) defines the metric
from that configuration alone and asks the judge its own criteria."""

from __future__ import annotations

from tests.support.seam import in_fresh_process, prepared_config

DECLARED = {
    "name": "Seam politeness",
    "criteria": "Is the answer polite?",
    "evaluation_steps": ["Judge the tone"],
    "evaluation_params": ["actual_output"],
    "threshold": 0.6,
}

OTHER_PROCESS = """
import json, sys
from evalrunner.evaluators import Requirement, Sample
from evalrunner.judge.scripted import ScriptedJudge
from evalrunner.pipeline.context import RunContext
from evalrunner.run import RunConfig
from tests.support.suite_bucket import suite_store

config = RunConfig.model_validate(json.loads(sys.argv[1]))
class Recording(ScriptedJudge):
    seen = []

    def ask(self, messages, schema, **kwargs):
        self.seen += [m.content for m in messages]
        return super().ask(messages, schema, **kwargs)


judge = Recording({"GEval": {"score": 4, "reason": "courteous"}})
with suite_store(b"question\\nq\\n", bucket="other") as store:
    context = RunContext(store, config, judge_factory=lambda *a, **k: judge)
    [metric] = context.evaluators([Requirement.JUDGE])
    [result] = metric.evaluate(Sample(question="secret question", answer="Thank you!"))
print(json.dumps({"result": result.model_dump(), "prompts": judge.seen}))
"""


def test_a_judge_metric_is_built_in_another_process_from_the_run_config():
    config = prepared_config(
        {
            "target": {"lambdaArn": "fn"},
            "metrics": ["Seam politeness"],
            "judge_metrics": [DECLARED],
            "judge": {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
        }
    )

    assert config["metrics"] == ["Seam politeness"]
    assert [m["name"] for m in config["judge_metrics"]] == ["Seam politeness"]
    out = in_fresh_process(OTHER_PROCESS, config)
    result = out["result"]
    assert (result["metric"], result["score"], result["success"]) == ("Seam politeness", 0.75, True)
    prompt = "\n".join(out["prompts"])
    assert "Is the answer polite?" in prompt and "Judge the tone" in prompt
    assert "Thank you!" in prompt and "secret question" not in prompt
