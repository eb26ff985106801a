"""The registry finds evaluator modules by itself: adding an evaluator touches its own
module (and its test), never a central list; the catalog order is each module's declared
position, whatever the order modules happen to be imported in."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import evalrunner.evaluators as evaluators_package
from evalrunner.evaluators import registry

PROBE = """
from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Scored
from evalrunner.evaluators.registry import register

CATALOG_POSITION = {position}


@register
class Probe{n}(Evaluator):
    name = "Probe {n}"
    description = "test evaluator"
    inputs = frozenset({{Input.ANSWER}})
    metrics = (MetricSpec("Probe {n} metric", "always 1", primary=True),)

    def score(self, sample):
        return {{"Probe {n} metric": Scored(1.0, "ok")}}
"""


@pytest.fixture
def probe_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on the package's path (as a new file in evalrunner/evaluators/ would be),
    and a registry that has not looked yet; whatever the probes register is removed after."""
    registry.available()  # the real catalog is loaded before, as in a long-lived process
    monkeypatch.setattr(
        evaluators_package, "__path__", [*evaluators_package.__path__, str(tmp_path)]
    )
    monkeypatch.setattr(registry, "_loaded", False)
    before = dict(registry._REGISTRY)
    yield tmp_path
    for name in set(registry._REGISTRY) - set(before):
        cls = registry._REGISTRY.pop(name)
        for alias in (cls.name, *cls.aliases):
            registry._LOOKUP.pop(registry._key(alias), None)
        sys.modules.pop(cls.__module__, None)
    registry._REGISTRY.clear()
    registry._REGISTRY.update(before)


def write_probe(folder: Path, module: str, n: int, position: str) -> None:
    source = PROBE.format(n=n, position=position)
    if position == "":
        source = source.replace("CATALOG_POSITION = \n", "")
    (folder / f"{module}.py").write_text(textwrap.dedent(source), "utf-8")


def test_a_new_module_registers_itself_at_its_declared_position(probe_dir: Path) -> None:
    write_probe(probe_dir, "zz_probe", 1, "15")  # after lexical (10), before text_matching (20)
    names = list(registry.available())
    assert "Probe 1" in names
    assert registry.resolve("probe 1").__module__ == "evalrunner.evaluators.zz_probe"
    lexical = [n for n, c in registry.available().items() if c.__module__.endswith(".lexical")]
    # imported last (its folder comes last on the path), yet placed by its position
    assert names.index("Probe 1") == names.index(lexical[-1]) + 1
    assert names[names.index("Probe 1") + 1] == "Text matching"
    assert "Probe 1" in registry.default_names()  # needs nothing: in the default selection


def test_a_module_without_a_position_comes_last_by_module_name(probe_dir: Path) -> None:
    write_probe(probe_dir, "bb_probe", 3, "")
    write_probe(probe_dir, "aa_probe", 2, "")
    names = list(registry.available())
    assert names[-2:] == ["Probe 2", "Probe 3"]


def test_every_catalog_module_declares_a_distinct_position() -> None:
    """Two modules at one position would fall back to name order: say which comes first."""
    positions: dict[str, float] = {}
    for cls in registry.available().values():
        module = ".".join(cls.__module__.split(".")[:3])
        position = getattr(sys.modules[module], "CATALOG_POSITION", None)
        assert isinstance(position, int | float), f"{module} declares no CATALOG_POSITION"
        positions[module] = position
    assert len(set(positions.values())) == len(positions), positions


def test_the_catalog_order_follows_the_positions() -> None:
    """Model evaluators come after judge ones, which come after the CPU ones, within each
    module in the order the module defines them (as `evalrunner metrics` has always shown)."""
    names = list(registry.available())
    assert names[:4] == ["Rouge Metric", "BLEU", "Token F1", "Exact match"]
    assert names.index("Refusal") < names.index("Faithfulness") < names.index("GEval")
    assert names.index("GEval") < names.index("Answer semantic similarity")
    assert names[-1] == "Summarization completeness and faithfulness"
