"""Named judge metrics: any number of GEval and BYOP metrics in one run, each its own metric.

A run declares them in the event's ``judge_metrics`` (``--judge-metric`` on the CLI;
``GEval(name=...)`` / ``BYOP(name=...)`` objects in ``evaluate(metrics=[...])``)::

    {"kind": "geval", "name": "Politeness", "criteria": "Is the answer polite?",
     "evaluation_params": ["input", "actual_output"], "threshold": 0.7}

Each becomes an evaluator class of its own (a subclass of GEval or BYOP whose one metric has
the declared name and threshold and whose options are the declared settings), registered in
the catalog like a plugin's metric: so it is a column of details.csv, a row of result.csv and
a name ``thresholds`` and ``fail_under`` accept, through the very code a built-in metric goes
through. Why classes and not options on one GEval: metrics are named by their evaluator's
class everywhere (columns, gates, the judge-call estimate), and a run's steps rebuild their
evaluators from the run's configuration by name; the configuration carries the declarations
(``RunConfig.judge_metrics``) and every step defines them again before it looks a name up.

A name already taken (a built-in evaluator, alias or metric, a plugin's metric, another
declaration of the same run) is refused with a :class:`~evalrunner.errors.ConfigError`. The
judge's response cache needs no key of its own: the criteria, steps and fields are in the
prompt the cache is keyed by.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalrunner.errors import ConfigError
from evalrunner.evaluators import registry
from evalrunner.evaluators.base import Evaluator

__all__ = ["JudgeMetric", "declared", "define", "define_all", "judge_kind"]

#: The module name the declared classes carry: outside the package, so the catalog treats
#: them as the user's (checked against every name in use), and importable by no one.
MODULE = "evalrunner.judge_metrics"
#: Characters a name may have besides letters and digits: names are untrusted (an event
#: field) and become report columns, file cells and HTML text.
NAME_PUNCTUATION = " _-.()/&+'"
NAME_MAX = 64


def _check_name(value: str) -> str:
    name = " ".join(value.split())
    if not name:
        raise ValueError("name is empty")
    if len(name) > NAME_MAX:
        raise ValueError(f"name is longer than {NAME_MAX} characters")
    if not name[0].isalpha() or not all(c.isalnum() or c in NAME_PUNCTUATION for c in name):
        raise ValueError(
            f"name {name!r} must start with a letter and hold only letters, digits, spaces "
            f"and {NAME_PUNCTUATION.strip()}"
        )
    return name


class JudgeMetric(BaseModel):
    """One named judge metric as a run declares it (the event's ``judge_metrics``)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["geval", "byop"] = Field(
        default="geval",
        description="geval: the judge scores the case 1-5 (or 1-10) on criteria or steps; "
        "byop: the judge answers your yes/no prompt template.",
    )
    name: Annotated[str, AfterValidator(_check_name)] = Field(
        description="The metric's name: its column, result row and the key of thresholds "
        "and fail_under. Must not be a name already in use ('evalrunner metrics').",
    )
    threshold: float = Field(
        default=0.5, ge=0.0, le=1.0, description="A case passes at this score or above."
    )
    criteria: str | None = Field(default=None, description="geval: what a good answer is.")
    evaluation_steps: list[str] | None = Field(
        default=None, description="geval: the steps the judge follows (else it writes them)."
    )
    evaluation_params: list[str] | None = Field(
        default=None,
        description="geval: the case fields the judge sees: input, actual_output, "
        "expected_output, retrieval_context (default: all the case has).",
    )
    scale: Literal[5, 10] | None = Field(default=None, description="geval: 1-5 (default) or 1-10.")
    prompt: str | None = Field(
        default=None,
        description="byop: a yes/no question over {question}, {expected_answer}, {context}, "
        "{answer}; its placeholders are the fields the judge sees.",
    )

    @model_validator(mode="after")
    def _fields_of_kind(self) -> Self:
        geval_only = {
            k: v
            for k, v in (
                ("criteria", self.criteria),
                ("evaluation_steps", self.evaluation_steps),
                ("evaluation_params", self.evaluation_params),
                ("scale", self.scale),
            )
            if v is not None
        }
        if self.kind == "byop":
            if geval_only:
                raise ValueError(
                    f"a byop metric takes prompt, not {', '.join(geval_only)} (those are a "
                    "geval metric's; the prompt's placeholders are the fields the judge sees)"
                )
            if self.prompt is None:
                raise ValueError("a byop metric needs prompt (a yes/no question template)")
        else:
            if self.prompt is not None:
                raise ValueError(
                    "a geval metric takes criteria and/or evaluation_steps, not prompt "
                    '(that is a byop metric\'s: set "kind": "byop")'
                )
            if self.criteria is None and self.evaluation_steps is None:
                raise ValueError("a geval metric needs criteria or evaluation_steps (or both)")
        return self

    def options(self) -> dict[str, Any]:
        """The evaluator options the declaration sets (those of GEval or BYOP)."""
        return self.model_dump(exclude={"kind", "name", "threshold"}, exclude_none=True)


E = TypeVar("E", bound=Evaluator)

#: The evaluator each kind is a named copy of (GEval and BYOP add themselves on import).
_KINDS: dict[str, type[Evaluator]] = {}
_LOCK = threading.RLock()


def judge_kind(kind: str) -> Callable[[type[E]], type[E]]:
    """Class decorator: ``kind`` of ``judge_metrics`` declares a named copy of this class."""

    def add(cls: type[E]) -> type[E]:
        _KINDS[kind] = cls
        return cls

    return add


def declared(cls: type[Evaluator]) -> JudgeMetric | None:
    """The declaration ``cls`` was made from; None for any other evaluator."""
    found = getattr(cls, "declaration", None)
    return found if isinstance(found, JudgeMetric) else None


def define(metric: JudgeMetric) -> type[Evaluator]:
    """The evaluator of ``metric``, registered under its name (the same class again for the
    same declaration; a former declaration of the name in this process is replaced)."""
    registry.available()  # every built-in evaluator registered, GEval and BYOP among them
    base = _KINDS[metric.kind]
    try:
        base.options_model.model_validate(metric.options())
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or metric.kind}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"judge metric {metric.name!r}: {problems}") from exc
    with _LOCK:
        owner = registry.owner_of(metric.name)
        if owner is not None:
            former = declared(owner)
            if former == metric:
                return owner
            if former is None:
                kind = "built-in" if registry.is_builtin(owner) else f"plugin {owner.__module__}'s"
                raise ConfigError(
                    f"judge metric name {metric.name!r} is already taken by the {kind} "
                    f"evaluator {owner.name!r}; give the judge metric another name "
                    "('evalrunner metrics' lists the names in use)"
                )
            registry.unregister(owner)
        spec = replace(
            base.primary_metric(),
            name=metric.name,
            description=f"{base.name} judge metric: "
            + (metric.criteria or metric.prompt or "; ".join(metric.evaluation_steps or [])),
            threshold=metric.threshold,
        )
        attributes: dict[str, Any] = {
            "__module__": MODULE,
            "__qualname__": metric.name,
            "__doc__": f"The judge metric {metric.name!r} ({base.name}).",
            "name": metric.name,
            "aliases": (),
            "description": spec.description,
            "metrics": (spec,),
            "in_defaults": False,
            "declaration": metric,
            "default_options": metric.options(),
        }
        cls = type(f"{base.__name__}Named", (base,), attributes)
        registry.register(cls)
        return cls


def define_all(metrics: Iterable[JudgeMetric]) -> list[type[Evaluator]]:
    """The evaluators of a run's declarations, in order; two of one name are refused."""
    seen: dict[str, str] = {}
    classes: list[type[Evaluator]] = []
    for metric in metrics:
        key = metric.name.casefold()
        if key in seen:
            raise ConfigError(
                f"judge metric name {metric.name!r} is declared twice (also as "
                f"{seen[key]!r}); each judge metric needs a name of its own"
            )
        seen[key] = metric.name
        classes.append(define(metric))
    return classes


class Declarable:
    """What GEval and BYOP share to be declared in Python: ``GEval(name="Politeness",
    criteria=..., threshold=0.7)`` builds the named metric's evaluator (its class defined and
    registered as the event's ``judge_metrics`` would), so ``evaluate(metrics=[...])`` takes
    it like any evaluator object."""

    #: The declared settings of a named copy (a class :func:`define` made); empty otherwise.
    default_options: ClassVar[dict[str, Any]] = {}
    #: The declaration of a named copy; None for GEval and BYOP themselves.
    declaration: ClassVar[JudgeMetric | None] = None
    #: The ``kind`` of ``judge_metrics`` this class is.
    judge_kind: ClassVar[str]

    def __new__(cls, *args: Any, name: str | None = None, **kwargs: Any) -> Self:
        if name is None or cls.declaration is not None:
            return super().__new__(cls)
        fields = {
            k: v for k, v in kwargs.items() if k in JudgeMetric.model_fields and v is not None
        }
        try:
            metric = JudgeMetric.model_validate({"kind": cls.judge_kind, "name": name, **fields})
        except ValidationError as exc:
            problems = "; ".join(e["msg"] for e in exc.errors())
            raise ConfigError(f"{cls.__name__}(name={name!r}): {problems}") from exc
        # an instance of the named class: Python then runs its __init__ with these arguments
        return cast(Self, object.__new__(define(metric)))
