"""Classification checks: did the target pick the expected intent, or the expected tool?

Per case, ``Intent correct`` / ``Tool correct`` is 1 when the label the target reported equals
the case's expected label (both trimmed, inner whitespace folded, compared case-insensitively
unless the option ``case_sensitive`` is set); its run average is the accuracy. A case without
an expected label is out of scope and skipped, unless the option ``none_as_label`` is set:
then "none" is a label like any other, so a case that expects no label is correct (1) when the
target reported none too and wrong (0) when it reported one (the HR evaluation plan scores
"no tool expected and none used" 1). A target that reported no label is scored as having
predicted the label ``(none)``, which is wrong where a label was expected.

Over the run, ``summarize`` adds what no per-case score can hold, computed by hand:

* ``accuracy`` — correct cases / scored cases.
* per expected label L: precision = TP / (TP + FP) (cases predicted L that were L, over cases
  predicted L), recall = TP / support (support = cases expected L), F1 = 2PR / (P + R).
* ``macro_precision``, ``macro_recall``, ``macro_f1`` — unweighted means over the labels that
  were *expected* at least once (scikit-learn's ``labels=`` convention). A label predicted but
  never expected (including ``(none)``) is not averaged over: its wrong predictions already
  lower the recall of the labels that were expected. Zero divisions count as 0: a label never
  predicted has precision 0, and F1 is 0 when P + R = 0 (scikit-learn's
  ``zero_division=0``).
* ``confusion_matrix`` — ``{expected label: {predicted label: count}}``: one row per expected
  label, one column per label of ``labels`` (expected or predicted), zeros included.
* ``labels`` — every label seen, expected or predicted, sorted; ``support`` — cases per
  expected label; ``per_label`` — precision, recall, F1 and support of each expected label;
  ``cases`` — the number of scored cases.

Labels are shown as first written in the run (the first spelling seen of each normalised
label), so ``"Leave_Request"`` and ``"leave_request "`` are one label shown once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from evalrunner.evaluators.base import (
    Evaluator,
    Input,
    MetricResult,
    MetricSpec,
    Sample,
    Scored,
    SkipCase,
)
from evalrunner.evaluators.registry import register

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 80

#: The label of a case where the target reported none.
NO_LABEL = "(none)"


class ClassificationOptions(BaseModel):
    """Run-wide settings of the classification evaluators (``evaluator_options``)."""

    model_config = ConfigDict(extra="forbid")

    #: Compare labels case-sensitively ("Leave" ≠ "leave"); whitespace is trimmed either way.
    case_sensitive: bool = False
    #: Score the cases that expect no label: correct (1) when the target reported none too,
    #: wrong (0) when it reported one; "(none)" joins the confusion matrix. Off: skipped.
    none_as_label: bool = False


def _display(label: str) -> str:
    return " ".join(label.split())


def confusion_summary(pairs: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """Accuracy, macro P/R/F1, confusion matrix and support of (expected, predicted) pairs.

    Labels are compared as given; see the module docstring for the definitions.
    """
    if not pairs:
        return None
    expected_labels = sorted({e for e, _ in pairs})
    labels = sorted({label for pair in pairs for label in pair})
    counts = Counter(pairs)
    support = Counter(e for e, _ in pairs)
    predicted = Counter(p for _, p in pairs)
    per_label: dict[str, dict[str, float | int]] = {}
    for label in expected_labels:
        tp = counts[(label, label)]
        precision = tp / predicted[label] if predicted[label] else 0.0
        recall = tp / support[label]
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[label] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": support[label],
        }
    n = len(expected_labels)
    return {
        "cases": len(pairs),
        "accuracy": sum(counts[(label, label)] for label in expected_labels) / len(pairs),
        "macro_precision": sum(m["precision"] for m in per_label.values()) / n,
        "macro_recall": sum(m["recall"] for m in per_label.values()) / n,
        "macro_f1": sum(m["f1"] for m in per_label.values()) / n,
        "labels": labels,
        "confusion_matrix": {e: {p: counts[(e, p)] for p in labels} for e in expected_labels},
        "support": {label: support[label] for label in expected_labels},
        "per_label": per_label,
    }


class LabelMatch(Evaluator[ClassificationOptions]):
    """Shared logic: the target's reported label against the case's expected label."""

    #: Sample field with the expected label, and the one with the target's label.
    expected_field: ClassVar[str]
    predicted_field: ClassVar[str]
    #: What a label is, in messages ("intent", "tool").
    noun: ClassVar[str]
    #: Fill hint for a case without an expected label.
    column: ClassVar[str]

    # The expected label is not an ``Input``: its absence is checked in ``score``.
    inputs = frozenset({Input.QUESTION})

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        """Only cases with an expected label are in scope."""
        expected = getattr(sample, cls.expected_field)
        return expected is not None and bool(expected.strip())

    def _key(self, label: str) -> str:
        label = _display(label)
        return label if self.options.case_sensitive else label.casefold()

    def _labels(self, sample: Sample) -> tuple[str | None, str | None]:
        expected = getattr(sample, self.expected_field)
        predicted = getattr(sample, self.predicted_field)
        expected = expected if expected is not None and expected.strip() else None
        predicted = predicted if predicted is not None and predicted.strip() else None
        return expected, predicted

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        expected, predicted = self._labels(sample)
        metric = self.primary_metric().name
        if expected is None:
            if not self.options.none_as_label:
                raise SkipCase(
                    f"the case has no expected {self.noun} (fill the {self.column} column, or "
                    f"set the option none_as_label to score 'no {self.noun} expected' cases)"
                )
            if predicted is None:
                return {metric: Scored(1.0, f"no {self.noun} expected and none reported")}
            return {metric: Scored(0.0, f"{self.noun} {_display(predicted)!r}, expected none")}
        if predicted is None:
            return {
                metric: Scored(
                    0.0,
                    f"the target reported no {self.noun}: counted as {NO_LABEL!r}, "
                    f"expected {_display(expected)!r}",
                )
            }
        if self._key(expected) == self._key(predicted):
            return {metric: Scored(1.0, f"{self.noun} {_display(predicted)!r} as expected")}
        return {
            metric: Scored(
                0.0, f"{self.noun} {_display(predicted)!r}, expected {_display(expected)!r}"
            )
        }

    def summarize(
        self, samples: Sequence[Sample], results: Sequence[Sequence[MetricResult]]
    ) -> dict[str, Any] | None:
        """The run's confusion matrix and macro P/R/F1 over the cases scored per case.

        A case is counted when it has an expected label, unless its per-case results say it
        was skipped or failed.
        """
        shown: dict[str, str] = {}
        pairs: list[tuple[str, str]] = []
        for i, sample in enumerate(samples):
            case_results = results[i] if i < len(results) else ()
            if case_results and not any(r.status == "scored" for r in case_results):
                continue
            expected, predicted = self._labels(sample)
            if expected is None and not self.options.none_as_label:
                continue
            keys = []
            for label in (expected, predicted):
                if label is None:
                    keys.append(NO_LABEL)
                    continue
                key = self._key(label)
                shown.setdefault(key, _display(label))
                keys.append(shown[key])
            pairs.append((keys[0], keys[1]))
        return confusion_summary(pairs)


@register
class IntentClassification(LabelMatch):
    """The intent a router reported against the case's expected intent; the run summary adds
    the confusion matrix, which says which intents are mistaken for which.

    >>> sample = Sample(question="I was charged twice", intent="Billing", expected_intent="refund")
    >>> for r in IntentClassification().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Intent correct: 0.00 - intent 'Billing', expected 'refund'
    """

    name = "Intent classification"
    aliases = ("Intent accuracy", "classified_intent_score")
    description = (
        "1 when the intent the target reported is the case's expected intent; the run "
        "summary adds accuracy, macro precision/recall/F1 and the confusion matrix."
    )
    expected_field = "expected_intent"
    predicted_field = "intent"
    noun = "intent"
    column = "expected_intent"
    metrics = (
        MetricSpec(
            "Intent correct",
            "1 when the reported intent equals the expected intent (run average: accuracy)",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )


@register
class ToolChoice(LabelMatch):
    """The one tool an agent chose against the case's expected tool (labels compared ignoring
    case by default); for a sequence of tools see Tool correctness.

    >>> sample = Sample(question="Will it rain?", tool="weather", expected_tool="Weather")
    >>> for r in ToolChoice().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Tool correct: 1.00 - tool 'weather' as expected
    """

    name = "Tool choice"
    aliases = ("Tool selection", "Tool accuracy", "selected_tool_score")
    description = (
        "1 when the tool the target called is the case's expected tool; the run summary "
        "adds accuracy, macro precision/recall/F1 and the confusion matrix."
    )
    expected_field = "expected_tool"
    predicted_field = "tool"
    noun = "tool"
    column = "expected_tool"
    metrics = (
        MetricSpec(
            "Tool correct",
            "1 when the reported tool equals the expected tool (run average: accuracy)",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )


@register
class AnswerClassification(LabelMatch):
    """H2O Eval Studio's ``Classification``: the answer is a class label (a sentiment, a
    category, yes / no), compared with the expected answer as one. Only when named: most
    expected answers are free text, for which this would be a strict exact match.

    >>> sample = Sample(question="Review: loved it", answer="Positive", expected_answer="positive")
    >>> for r in AnswerClassification().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Class correct: 1.00 - class 'Positive' as expected
    """

    name = "Classification"
    aliases = ("Answer classification",)
    description = (
        "The answer taken as a class label: 1 when it is the expected answer's label; the run "
        "summary adds accuracy, macro precision/recall/F1 and the confusion matrix."
    )
    in_defaults = False
    expected_field = "expected_answer"
    predicted_field = "answer"
    noun = "class"
    column = "expected_answer"
    metrics = (
        MetricSpec(
            "Class correct",
            "1 when the answer's label equals the expected label (run average: accuracy)",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )
