"""The event's perturbations, the CLI's --perturb, and the manifest Prepare writes from them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalrunner.cli.common import perturbation_arg
from evalrunner.errors import EventError, SuiteError
from evalrunner.event import parse_event, read_event
from evalrunner.judge.config import JudgeConfig
from evalrunner.perturb import PerturbationSpec, perturb_text, resolve
from evalrunner.pipeline import prepare
from evalrunner.storage import RunStore
from tests.support.suite_bucket import suite_store

SUITE = (
    b"id,question,expected_answer\n"
    b"leave,How many days of annual leave?,25 days\n"
    b"n42,42?,42\n"  # nothing a synonym or a typo can touch: no perturbed copy
)


def event(**extra: object) -> dict[str, object]:
    return {
        "key": "test-suites/s.csv",
        "iterations": 2,
        "target": {"lambdaArn": "fn"},
        "metrics": ["Exact match"],
        **extra,
    }


def test_perturbations_are_resolved_with_defaults() -> None:
    parsed = parse_event(
        event(perturbations=[{"kind": "typos", "intensity": 0.1, "seed": 7}, {"kind": "synonym"}])
    )
    assert [(p.kind, p.name, p.intensity, p.seed) for p in parsed.perturbations] == [
        ("typos", "typos", 0.1, 7),
        ("synonym", "synonym", 1.0, 0),
    ]
    assert parse_event(event()).perturbations == []


@pytest.mark.parametrize(
    ("perturbations", "message"),
    [
        ([{"kind": "typo"}], "perturbations[0].kind: unknown kind 'typo'; valid kinds: "),
        ([{"kind": "typos", "intensity": 0}], "perturbations.0.intensity: 0 is less than or equal"),
        ([{"kind": "typos", "intensity": 1.5}], "perturbations.0.intensity: 1.5 is greater than"),
        ([{"kind": "typos", "strength": 1}], "unknown field 'strength'"),
        ([{"kind": "typos"}, {"kind": "typos"}], "a second perturbation named 'typos@0.05'"),
        ("typos", "perturbations: 'typos' is not of type 'array'"),
    ],
)
def test_bad_perturbations_are_refused_by_field(perturbations: object, message: str) -> None:
    with pytest.raises(EventError) as caught:
        parse_event(event(perturbations=perturbations))
    assert any(message in p for p in caught.value.problems), caught.value.problems


def test_cli_perturb_argument() -> None:
    assert perturbation_arg("typos") == {"kind": "typos"}
    assert perturbation_arg("typos:0.1") == {"kind": "typos", "intensity": 0.1}
    assert perturbation_arg("typos:0.1:7") == {"kind": "typos", "intensity": 0.1, "seed": 7}
    assert perturbation_arg("synonym::3") == {"kind": "synonym", "seed": 3}
    for bad in ("typos:lots", "typos:0.1:x", "a:1:2:3", ":0.1"):
        with pytest.raises(EventError, match="--perturb"):
            perturbation_arg(bad)


@pytest.fixture
def store():
    with suite_store(SUITE) as store:
        yield store


def test_prepare_expands_cases_iterations_and_perturbations(store: RunStore) -> None:
    raw = event(run_id="r1", perturbations=[{"kind": "typos", "seed": 7}, {"kind": "synonym"}])
    out = prepare.prepare_run(read_event(raw), store, now=datetime(2026, 11, 22, 9, 30, tzinfo=UTC))
    items = store.get_json(out.manifest_key)
    assert [i["item_id"] for i in items] == [
        "c00001-i1",
        "c00001-p1-i1",
        "c00001-p2-i1",
        "c00002-i1",
        "c00001-i2",
        "c00001-p1-i2",
        "c00001-p2-i2",
        "c00002-i2",
    ]
    assert out.item_count == 8
    typo = items[1]["case"]
    spec = resolve([PerturbationSpec(kind="typos", seed=7)])[0]
    assert typo["case_id"] == "leave~typos"
    assert typo["question"] == perturb_text("How many days of annual leave?", spec, "leave")
    assert typo["perturbation"] == {
        "of": "leave",
        "kind": "typos",
        "name": "typos",
        "intensity": 0.05,
        "seed": 7,
        "original_question": "How many days of annual leave?",
        "expect_flip": False,
        "context": False,
        "false_fact": None,
        "chunk": None,
        "original_context": None,
        "check": None,
        "error": None,
    }
    assert items[2]["case"]["question"] == "How many days of yearly time off?"
    assert items[5]["case"] == typo  # perturbed once: every iteration asks the same
    config = store.get_json(store.run_key("r1"))
    assert config["case_count"] == 2 and config["item_count"] == 8
    assert [p["name"] for p in config["perturbations"]] == ["typos", "synonym"]


def test_a_context_perturbation_without_contexts_is_refused(store: RunStore) -> None:
    raw = event(perturbations=[{"kind": "ocr", "context": True}])
    with pytest.raises(SuiteError, match=r"perturbations\[0\] \(ocr\): context is true, but no"):
        prepare.prepare_run(read_event(raw), store)
    assert store.list_keys("runs/") == []


CHUNKED = (
    b"id,question,expected_answer,retrieved_contexts\n"
    b'leave,How many days of annual leave?,25 days,"[""Staff get 25 days.""]"\n'
    b"bare,Any question without chunks?,no,\n"
)


def test_prepare_has_the_judge_falsify_each_case_once(store: RunStore) -> None:
    from tests.support.fake_judge import FakeJudge

    store.s3.put_object(Bucket="runner-bucket", Key="test-suites/c.csv", Body=CHUNKED)
    judge = FakeJudge()
    judge.reply(
        "misinformation rewrite",
        {"rewritten": "Staff get 30 days.", "false_fact": "Staff get 30 days."},
    )
    built: list[JudgeConfig] = []

    def make_judge(spec: JudgeConfig) -> FakeJudge:
        built.append(spec)
        return judge

    raw = event(
        key="test-suites/c.csv",
        run_id="r2",
        target={"url": "http://127.0.0.1:9/ask", "contexts_field": "sources"},
        judge={"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}},
        perturbations=[{"kind": "misinformation", "seed": 2}],
    )
    out = prepare.prepare_run(read_event(raw), store, make_judge=make_judge)
    items = store.get_json(out.manifest_key)
    # two iterations of the perturbed copy, one rewrite; the case without chunks has none
    assert [i["item_id"] for i in items] == [
        "c00001-i1",
        "c00001-p1-i1",
        "c00002-i1",
        "c00001-i2",
        "c00001-p1-i2",
        "c00002-i2",
    ]
    assert len(judge.calls) == 1 and len(built) == 1
    # the event's judge object, checked: the run's configuration carries it typed
    assert built[0].openai is not None and built[0].openai.model == "j"
    first, second = items[1]["case"], items[4]["case"]
    assert first == second
    assert first["case_id"] == "leave~misinformation"
    assert first["contexts"] == ["Staff get 30 days."]
    p = first["perturbation"]
    assert (p["false_fact"], p["chunk"], p["original_context"], p["seed"]) == (
        "Staff get 30 days.",
        1,
        "Staff get 25 days.",
        2,
    )
    assert p["check"] == "Misinformation handled"
    # the check that judges it joins the metrics the event named
    config = store.get_json(store.run_key("r2"))
    assert config["metrics"] == ["Exact match", "Misinformation handled"]


def test_prepare_refuses_misinformation_for_a_target_that_retrieves(store: RunStore) -> None:
    store.s3.put_object(Bucket="runner-bucket", Key="test-suites/c.csv", Body=CHUNKED)
    raw = event(
        key="test-suites/c.csv",
        judge={"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}},
        perturbations=[{"kind": "misinformation"}],
    )
    with pytest.raises(EventError, match=r"target\.contexts_field"):
        prepare.prepare_run(read_event(raw), store)
    assert store.list_keys("runs/") == []
