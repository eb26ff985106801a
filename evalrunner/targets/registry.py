"""Target kinds registered by the key that selects them, so adding one touches one module.

A target class declares everything the rest of evalrunner needs to know about its kind:
``kind`` (the key in the event's target object), ``spec_model`` (its fields, from which the
event's JSON Schema is generated), ``calls_aws`` (it takes the injected boto3 session, and the
local engine gives it real credentials), ``own_name`` (its report folder, computed without a
client) and ``iam`` (what the deployed runner's role must be granted to call it, read by
``infra/parts/functions.py``).
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union

from pydantic import Discriminator, Tag, TypeAdapter

from evalrunner.errors import ConfigError
from evalrunner.targets.base import Target
from evalrunner.targets.spec import TargetSpec

_REGISTRY: dict[str, type[Target]] = {}

T = TypeVar("T", bound=type[Target])


def register(cls: T) -> T:
    """Class decorator: make ``cls`` the target for its ``kind`` key."""
    other = _REGISTRY.get(cls.kind)
    if other is not None and other is not cls:
        raise RuntimeError(f"target kind {cls.kind!r} is already taken by {other.__name__}")
    if getattr(cls, "spec_model", None) is None:
        raise RuntimeError(f"target {cls.__name__} declares no spec_model")
    _REGISTRY[cls.kind] = cls
    return cls


#: The modules holding the built-in kinds, in the order users read them (messages, schema).
#: Any other public module of this package is imported too (after these), so a new kind is
#: one new module.
MODULES = (
    "bedrock_agent",
    "step_functions",
    "lambda_function",
    "http",
    "openai_chat",
    "azure_openai",
    "openai_responses",
    "knowledge_base",
    "logged",
)
#: Modules of the package that hold no kind.
_NOT_KINDS = frozenset({"adapters", "base", "factory", "registry", "spec"})
_loaded = False


def _ensure_loaded() -> None:
    # Importing the modules runs their @register decorators.
    global _loaded
    if _loaded:
        return
    found = [m.name for m in pkgutil.iter_modules(_package_path())]
    others = sorted(m for m in found if m not in MODULES and m not in _NOT_KINDS)
    for module in (*MODULES, *(m for m in others if not m.startswith("_"))):
        importlib.import_module(f"evalrunner.targets.{module}")
    _loaded = True


def _package_path() -> list[str]:
    # The folder this module is in is the package's: no import of the package (whose
    # __init__ names the factory, which imports this registry) is needed to find it.
    return [str(Path(__file__).resolve().parent)]


def available() -> dict[str, type[Target]]:
    """Every target class by its kind key: the built-in kinds in :data:`MODULES` order
    (whichever module happened to be imported first), then others as registered."""
    _ensure_loaded()
    order = [f"evalrunner.targets.{m}" for m in MODULES]  # then the others, as registered

    def rank(cls: type[Target]) -> int:
        return order.index(cls.__module__) if cls.__module__ in order else len(order)

    return {cls.kind: cls for cls in sorted(_REGISTRY.values(), key=rank)}


def detect_kind(spec: Any) -> str:
    """The one kind key present in ``spec``; ConfigError naming what was found otherwise."""
    kinds = available()
    if not isinstance(spec, dict):
        raise ConfigError(f"The target must be a JSON object, got {type(spec).__name__}.")
    found = [key for key in kinds if key in spec]
    if len(found) != 1:
        what = f"found {', '.join(found)}" if found else f"found none (keys: {sorted(spec)})"
        raise ConfigError(
            f"The target must name exactly one kind of target: {', '.join(kinds)}; "
            f'{what}. E.g. {{"agentId": "AGENT_ID", "agentAliasId": "ALIAS_ID"}} or '
            '{"lambdaArn": "arn:aws:lambda:..."}.'
        )
    kind = found[0]
    missing = [key for key in kinds[kind].companions if not spec.get(key)]
    if missing:
        raise ConfigError(f"A target with {kind} also needs {', '.join(missing)}.")
    if not spec.get(kind):
        raise ConfigError(f"target.{kind} is empty.")
    return kind


def target_class(spec: Any) -> type[Target]:
    """The class that calls the target ``spec`` names."""
    return available()[detect_kind(spec)]


def _kind_of(value: Any) -> str | None:
    """The discriminator of the target union: the one kind key present (None: zero or two)."""
    if isinstance(value, TargetSpec):
        value = value.model_fields_set
    found = [kind for kind in available() if isinstance(value, dict | set) and kind in value]
    return found[0] if len(found) == 1 else None


@lru_cache(maxsize=4)
def _adapter(classes: tuple[type[Target], ...]) -> TypeAdapter[TargetSpec]:
    variants = tuple(Annotated[cls.spec_model, Tag(cls.kind)] for cls in classes)
    union = Union[variants]  # type: ignore[valid-type]  # noqa: UP007 (built at run time)
    return TypeAdapter(Annotated[union, Discriminator(_kind_of)])


def parse_spec(raw: Any) -> TargetSpec:
    """The target object as its kind's spec model: one discriminated union of every
    registered kind, the discriminator being the kind key present. Raises pydantic's
    ValidationError (locations start with the kind). The object as written is kept beside
    the model (:meth:`TargetSpec.as_written`); a spec given already parsed is returned as it
    is."""
    spec = _adapter(tuple(available().values())).validate_python(raw)
    if isinstance(raw, dict):
        spec._written = copy.deepcopy(raw)
    return spec
