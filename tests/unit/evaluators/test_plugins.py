"""The metric decorator and plugin discovery, one metric at a time (the runs that use them
are in ``tests/integration/test_plugin_metrics.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import evalrunner
from evalrunner.errors import ConfigError, EventError, PluginError
from evalrunner.evaluators import Evaluator, Input, MetricSpec, Sample, Scored, registry
from evalrunner.evaluators.lexical import TokenF1
from evalrunner.evaluators.plugins import MetricFunction, load, normalize, selection
from evalrunner.event import parse_event
from tests.support.catalog import restored_catalog

EVENT = {"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://127.0.0.1:9"}}


@pytest.fixture(autouse=True)
def catalog_restored() -> Iterator[None]:
    with restored_catalog("_evalrunner_plugin_", "unitplug_"):
        yield


def test_a_decorated_function_is_a_metric_with_its_threshold_and_direction():
    @evalrunner.metric(name="Unit words", threshold=3, higher_is_better=False, high=100)
    def words(sample: Sample) -> int:
        return len((sample.answer or "").split())

    assert isinstance(words, MetricFunction) and words.name == "Unit words"
    assert registry.resolve("unit words") is words.evaluator
    evaluator = words.evaluator()
    [short] = evaluator.evaluate(Sample(question="q", answer="one two"))
    [long] = evaluator.evaluate(Sample(question="q", answer="one two three four"))
    [missing] = evaluator.evaluate(Sample(question="q"))
    assert (short.score, short.success, short.threshold) == (2.0, True, 3.0)
    assert (long.score, long.success) == (4.0, False)
    assert missing.status == "skipped" and "no answer" in missing.reason


def test_a_function_that_returns_no_number_or_raises_errs_on_that_case():
    @evalrunner.metric(name="Unit wrong type")
    def wrong(sample: Sample) -> float:
        return "high"  # type: ignore[return-value]

    @evalrunner.metric(name="Unit raises", inputs=["question"])
    def raises(sample: Sample) -> Scored:
        raise KeyError("no such field")

    [result] = wrong.evaluator().evaluate(Sample(question="q", answer="a"))
    assert result.status == "error" and "return a number or evalrunner.Scored" in result.reason
    [result] = raises.evaluator().evaluate(Sample(question="q"))
    assert result.status == "error" and result.reason == "error: KeyError: 'no such field'"


def test_unknown_inputs_are_refused_with_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown inputs \\['answers'\\]; valid: question"):
        evalrunner.metric(name="Unit bad inputs", inputs=["answers"])


def test_a_plain_evaluator_subclass_in_a_plugin_file_is_registered(tmp_path):
    plugin = tmp_path / "subclass_metrics.py"
    plugin.write_text(
        "from evalrunner.evaluators import Evaluator, Input, MetricSpec, Scored\n\n\n"
        "class Polite(Evaluator):\n"
        '    name = "Unit polite"\n'
        '    description = "says please"\n'
        "    inputs = frozenset({Input.ANSWER})\n"
        '    metrics = (MetricSpec("Unit polite", "says please", primary=True),)\n\n'
        "    def score(self, sample):\n"
        '        return {"Unit polite": Scored(float("please" in sample.answer), "please?")}\n',
        "utf-8",
    )

    [cls] = load([normalize(str(plugin))])

    assert registry.resolve("Unit polite") is cls
    [result] = cls().evaluate(Sample(question="q", answer="please sit"))
    assert (result.score, result.success) == (1.0, True)


def test_a_second_plugin_may_not_take_a_plugins_name():
    @evalrunner.metric(name="Unit taken")
    def first(sample: Sample) -> float:
        return 1.0

    class Second(Evaluator):
        name = "Unit second"
        description = "x"
        inputs = frozenset({Input.ANSWER})
        metrics = (MetricSpec("Unit taken", "x"),)

        def score(self, sample: Sample) -> dict[str, Scored]:
            return {}

    with pytest.raises(PluginError, match=r"'Unit taken'.*already taken by the plugin"):
        registry.register(Second)


def test_evaluator_objects_carry_their_settings_into_the_event():
    @evalrunner.metric(name="Unit chosen")
    def chosen(sample: Sample) -> float:
        return 1.0

    picked = selection([TokenF1(threshold=0.4), "Rouge Metric", chosen, TokenF1])

    assert picked.metrics == ["Token F1", "Rouge Metric", "Unit chosen", "Token F1"]
    assert picked.thresholds == {"Token F1": 0.4}
    assert picked.plugins == [__name__]
    with pytest.raises(ConfigError, match="is not a metric"):
        selection([42])  # type: ignore[list-item]


def test_a_deployed_function_imports_only_the_plugins_its_deployment_holds(monkeypatch, tmp_path):
    (tmp_path / "unitplug_deployed.py").write_text(
        "import evalrunner\n\n\n"
        '@evalrunner.metric(name="Unit deployed")\n'
        "def deployed(sample):\n"
        "    return 1.0\n",
        "utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "prepare")
    monkeypatch.delenv("EVALRUNNER_PLUGINS", raising=False)

    with pytest.raises(EventError, match="imports only the plugin modules its deployment holds"):
        parse_event({**EVENT, "plugins": ["unitplug_deployed"]})

    monkeypatch.setenv("EVALRUNNER_PLUGINS", "other, unitplug_deployed")
    event = parse_event({**EVENT, "plugins": ["unitplug_deployed"]})
    assert event.plugins == ["unitplug_deployed"] and "Unit deployed" in event.metrics
