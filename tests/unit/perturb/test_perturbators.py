"""The perturbators: fixed outputs for a fixed seed (the same bytes on every machine), what
intensity means, what they never touch, and the bundled lexicon."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest

from evalrunner.errors import EventError
from evalrunner.perturb import KINDS, PerturbationSpec, perturb_case, perturb_text, resolve
from evalrunner.perturb.chars import KEYBOARD, touched
from evalrunner.perturb.lexicon import antonyms, synonyms
from evalrunner.suite.model import TestCase

QUESTION = "How many days of annual leave do full-time employees get per year?"

#: Seed 7, case id "leave-001", each kind at its default intensity. Written down once: a
#: change to any perturbator, its seeding or the lexicon shows here as a changed string.
EXPECTED = [
    ("char_replace", "How manb dlys of annual leave do fukl-time employees get per year?"),
    ("typos", "How many days of annuql leave do full-time employees fet pet year?"),
    ("char_insert", "How many days of annual leavde do full-time empbloyees get peyr year?"),
    ("char_delete", "How many days of annul leave d ful-time employees get per year?"),
    ("ocr", "How many days of annual 1eave do full-timc empl0yees get per year?"),
    ("yz_swap", "How manz dazs of annual leave do full-time emplozees get per zear?"),
    ("comma", "How, many days of annual leave do full-time, employees get per year?"),
    ("word_swap", "How many of days annual leave do full-time employees get per year?"),
    ("synonym", "How many days of yearly time off do full-time staff receive per year?"),
    ("antonym", "How many days of annual leave do part-time employees get per year?"),
    ("misinformation", QUESTION),  # the question is kept: the judge rewrites a context chunk
]


def spec(kind: str, **kw: object) -> PerturbationSpec:
    return resolve([PerturbationSpec.model_validate({"kind": kind, "seed": 7, **kw})])[0]


def test_every_kind_is_pinned_by_an_expected_string() -> None:
    assert [k for k, _ in EXPECTED] == list(KINDS)


@pytest.mark.parametrize(("kind", "expected"), EXPECTED)
def test_a_seed_gives_the_same_bytes(kind: str, expected: str) -> None:
    assert perturb_text(QUESTION, spec(kind), "leave-001") == expected


def test_the_same_in_another_process_with_another_hash_seed() -> None:
    """No str hash() and no set order: a fresh interpreter with a different
    PYTHONHASHSEED perturbs byte for byte alike."""
    code = (
        "import json;from evalrunner.perturb import *;"
        f"q={QUESTION!r};"
        "print(json.dumps([perturb_text(q, resolve([PerturbationSpec(kind=k, seed=7)])[0],"
        " 'leave-001') for k in KINDS]))"
    )
    for hash_seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": hash_seed, "PATH": ""},
        ).stdout
        assert json.loads(out) == [e for _, e in EXPECTED]


def test_another_seed_or_case_draws_differently() -> None:
    base = perturb_text(QUESTION, spec("typos"), "leave-001")
    assert perturb_text(QUESTION, spec("typos", seed=8), "leave-001") != base
    assert perturb_text(QUESTION, spec("typos"), "leave-002") != base


@pytest.mark.parametrize("intensity", [0.05, 0.1, 0.3])
def test_intensity_is_the_share_of_characters_touched(intensity: float) -> None:
    text = "abcdefghij klmnopqrst uvwxyzabcd efghijklmn opqrstuvwx"
    letters = sum(c.isalpha() for c in text)
    out = perturb_text(text, spec("char_replace", intensity=intensity), "c")
    changed = sum(a != b for a, b in zip(text, out, strict=True))
    assert changed == touched(letters, intensity) == max(1, int(letters * intensity + 0.5))


def test_typos_are_keyboard_neighbours_and_never_touch_digits() -> None:
    text = "Staff get 25 days"
    out = perturb_text(text, spec("typos", intensity=1.0), "c")
    assert out[10:12] == "25"
    for a, b in zip(text, out, strict=True):
        if a.isalpha():
            assert b.lower() in KEYBOARD[a.lower()]
            assert a.isupper() == b.isupper()


def test_word_kinds_count_words() -> None:
    text = "annual vacation annual vacation"
    once = perturb_text(text, spec("synonym", intensity=0.25), "c")
    assert sum(a != b for a, b in zip(text.split(), once.split(), strict=True)) == 1
    every = perturb_text(text, spec("synonym", intensity=1.0), "c")
    assert every == "yearly holiday yearly holiday"


def test_a_case_nothing_applies_to_makes_no_perturbed_copy() -> None:
    case = TestCase(index=0, case_id="n1", question="42?")
    assert perturb_case(case, spec("synonym")) is None
    assert perturb_case(case, spec("typos")) is None


def test_a_perturbed_case_is_linked_to_its_original() -> None:
    case = TestCase(index=3, case_id="leave-001", question=QUESTION, expected_answer="25 days")
    copy = perturb_case(case, spec("typos", intensity=0.1))
    assert copy is not None
    assert copy.case_id == "leave-001~typos"
    assert copy.question == perturb_text(QUESTION, spec("typos", intensity=0.1), "leave-001")
    assert copy.expected_answer == "25 days" and copy.index == 3
    p = copy.perturbation
    assert p is not None
    assert (p.of, p.kind, p.name, p.intensity, p.seed) == ("leave-001", "typos", "typos", 0.1, 7)
    assert p.original_question == QUESTION and not p.expect_flip and not p.context


def test_context_perturbation_touches_precomputed_contexts_only_when_asked() -> None:
    case = TestCase(
        index=0,
        case_id="lab-1",
        question="What is the leave?",
        answer="25 days",
        contexts=["Employees get 25 days of annual leave."],
    )
    plain = perturb_case(case, spec("typos", intensity=0.2))
    assert plain is not None and plain.contexts == case.contexts
    both = perturb_case(case, spec("typos", intensity=0.2, context=True))
    assert both is not None and both.perturbation is not None and both.perturbation.context
    assert both.contexts != case.contexts and both.contexts is not None
    assert "25" in both.contexts[0]


def test_names_default_to_the_kind_and_must_be_unique() -> None:
    specs = [PerturbationSpec(kind="typos", intensity=0.1), PerturbationSpec(kind="comma")]
    assert [s.name for s in resolve(specs)] == ["typos", "comma"]
    twice = [PerturbationSpec(kind="typos", intensity=0.1), PerturbationSpec(kind="typos")]
    assert [s.name for s in resolve(twice)] == ["typos@0.1", "typos@0.05"]
    with pytest.raises(EventError, match=r"a second perturbation named 'typos@0.1'"):
        resolve([PerturbationSpec(kind="typos", intensity=0.1)] * 2)
    with pytest.raises(EventError, match=r"perturbations\[0\].kind: unknown kind 'typo'.*typos"):
        resolve([PerturbationSpec(kind="typo")])


def test_the_lexicon_is_well_formed() -> None:
    data = json.loads(
        resources.files("evalrunner.perturb").joinpath("lexicon.json").read_text("utf-8")
    )
    assert "licence" in data["about"]
    for table in ("synonyms", "antonyms"):
        for group in data[table]:
            assert len(group) >= 2 and len(set(group)) == len(group), group
            assert all(w == w.strip() and w for w in group), group
    assert synonyms()["annual"] == ["yearly"] and synonyms()["yearly"] == ["annual"]
    assert antonyms()["paid"] == ["unpaid"] and antonyms()["unpaid"] == ["paid"]
    assert all(" " not in k and k == k.lower() for k in (*synonyms(), *antonyms()))
    assert all(word not in others for word, others in synonyms().items())


def test_the_readme_table_shows_what_each_kind_does() -> None:
    """The README's examples are the pinned outputs above: the section stays true."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text("utf-8")
    section = readme[readme.index("### Robustness: perturbed questions") :]
    for kind, expected in EXPECTED:
        line = next(x for x in section.splitlines() if x.startswith(f"| `{kind}` |"))
        assert line.rstrip(" |").endswith(expected), kind
        assert f"({KINDS[kind].default_intensity:g}" in line, kind
