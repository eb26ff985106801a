"""An evaluator names its options model once, as its type argument (``Evaluator[Options]``):
the model Prepare validates ``evaluator_options`` with and the type of ``self.options`` are
the same declaration, so they cannot drift apart and no evaluator reads its settings untyped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

import pytest
from pydantic import BaseModel, ConfigDict
from typing_extensions import get_original_bases

from evalrunner.evaluators import registry
from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, NoOptions, Sample, Scored
from evalrunner.evaluators.classification import ClassificationOptions, LabelMatch
from evalrunner.evaluators.leakage import (
    PiiLeakage,
    PiiOptions,
    SecretOptions,
    SensitiveDataLeakage,
)


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefix: str = ""


class _Prefixed(Evaluator[_Options]):
    name = "Prefixed"
    description = "test evaluator"
    inputs = frozenset({Input.ANSWER})
    metrics = (MetricSpec("Prefixed", "1 when the answer starts with the prefix", primary=True),)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        hit = (sample.answer or "").startswith(self.options.prefix)
        return {"Prefixed": Scored(float(hit), f"prefix {self.options.prefix!r}")}


def test_the_type_argument_is_the_options_model_the_event_is_validated_with():
    assert _Prefixed.options_model is _Options
    evaluator = _Prefixed(options={"prefix": "Paris"})
    assert isinstance(evaluator.options, _Options)
    result = evaluator.evaluate(Sample(question="capital?", answer="Paris, France"))
    assert [r.score for r in result] == [1.0]


def test_an_unknown_option_is_refused_by_the_type_argument_model():
    with pytest.raises(ValueError, match="colour"):
        _Prefixed(options={"colour": "blue"})


def test_subclasses_of_a_generic_base_get_their_own_model():
    assert LabelMatch.options_model is ClassificationOptions
    assert PiiLeakage.options_model is PiiOptions
    assert SensitiveDataLeakage.options_model is SecretOptions
    assert isinstance(PiiLeakage().options, PiiOptions)


def test_naming_the_model_twice_is_refused_at_class_definition():
    with pytest.raises(TypeError, match="name the options model once"):

        class _Twice(Evaluator[_Options]):
            options_model = _Options


def test_every_registered_evaluator_validates_with_its_declared_model():
    for name, cls in registry.available().items():
        declared = [
            arg
            for klass in cls.__mro__
            for base in get_original_bases(klass)
            for arg in get_args(base)
            if isinstance(arg, type) and issubclass(arg, BaseModel)
        ]
        expected = declared[0] if declared else cls.options_model
        assert cls.options_model is expected, name
        if not declared:  # evaluators without settings, and model evaluators' ModelOptions
            assert cls.options_model.__name__ in {"NoOptions", "ModelOptions"}, name


def test_an_evaluator_without_settings_accepts_none():
    assert NoOptions.model_validate({}) == NoOptions()
    with pytest.raises(ValueError, match="extra"):
        registry.resolve("Exact Match")(options={"anything": 1})
