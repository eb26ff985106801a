"""Names and addresses masked in a monitor run as a user runs one: ``evalrunner monitor
--pii '{"kinds": [..., "PERSON"], "ner_model": FOLDER}'`` and ``monitor_logs(mask_pii=...)``
with a spaCy pipeline saved to a folder (built here: no model hub), and the refusals that
come before anything is read when names are asked for without what they need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import spacy
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from evalrunner.privacy_names import load_pipeline

runner = CliRunner()
RECORD = {
    "id": "n1",
    "question": "I am Jane Doe, please update my address to 10 Downing Street, London SW1A 2AA",
    "answer": "Done, Jane Doe: your address is now 10 Downing Street, London SW1A 2AA.",
    "contexts": ["HR contact: John Smith, jsmith(at)example.com"],
    "timestamp": "2026-01-31T10:00:00Z",
}
SECRETS = ("Jane", "Doe", "Downing", "SW1A", "John Smith", "jsmith")


@pytest.fixture
def model(tmp_path: Path) -> str:
    load_pipeline.cache_clear()
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(  # type: ignore[attr-defined]
        [
            {"label": "PERSON", "pattern": [{"LOWER": "jane"}, {"LOWER": "doe"}]},
            {"label": "PERSON", "pattern": [{"LOWER": "john"}, {"LOWER": "smith"}]},
        ]
    )
    nlp.to_disk(tmp_path / "ner-model")
    return str(tmp_path / "ner-model")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "names.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", "utf-8")
    return path


def monitor(source: Path, out: Path, *extra: str) -> tuple[int, str]:
    args = ["monitor", str(source), "--out", str(out), "--quiet", "--fail-on", "errors", *extra]
    result = runner.invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.output


def written(out: Path) -> str:
    return "".join(p.read_text("utf-8", errors="replace") for p in out.rglob("*") if p.is_file())


def test_the_cli_masks_names_and_addresses_everywhere(
    tmp_path: Path, log: Path, model: str
) -> None:
    options = {"kinds": ["EMAIL", "PHONE", "ADDRESS", "PERSON"], "ner_model": model}
    out = tmp_path / "out"
    code, output = monitor(log, out, "--pii", json.dumps(options))
    assert code == 0, output
    text = written(out)
    assert not [s for s in SECRETS if s in text]
    (report,) = (out / "test-reports" / "monitor-names.jsonl").glob("*-report.json")
    (row,) = json.loads(report.read_text("utf-8"))["rows"]
    assert row["question"] == "I am <PERSON_1>, please update my address to <ADDRESS_1>"
    assert row["answer"] == "Done, <PERSON_1>: your address is now <ADDRESS_1>."


def test_the_python_api_takes_the_same_options(tmp_path: Path, log: Path, model: str) -> None:
    run = evalrunner.monitor_logs(
        log,
        out=tmp_path / "out",
        fail_on="errors",
        mask_pii={"kinds": ["EMAIL", "ADDRESS", "PERSON"], "ner_model": model},
    )
    assert run.run is not None
    assert not [s for s in SECRETS if s in written(tmp_path / "out")]


@pytest.mark.parametrize(
    ("pii", "extra", "message"),
    [
        ('{"kinds": ["PERSON"]}', [], "PERSON (personal names) needs an NER model"),
        ('{"kinds": ["PERSON"], "ner_model": "no-such-model"}', [], "'no-such-model'"),
        ("{kinds", [], "--pii: not JSON"),
        ('{"kinds": ["EMAIL"]}', ["--no-mask-pii"], "give one"),
    ],
)
def test_names_without_what_they_need_are_refused_before_anything_is_read(
    tmp_path: Path, log: Path, pii: str, extra: list[str], message: str
) -> None:
    load_pipeline.cache_clear()
    code, output = monitor(log, tmp_path / "out", "--pii", pii, *extra)
    assert code == 2 and message in output.replace("\n", " ")
    assert not (tmp_path / "out" / "monitor").exists()
