"""Issue 27 item 6: ``evalrunner generate`` reads only what it was given. A link that leads
out of the documents folder is refused (today a system file was read as a document, bound
for the judge), and every document is held to a limit on what it unpacks to (today a 1 MB
docx hung it past 300 s). Both end in exit 2 before the judge is asked anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.errors import ConfigError
from evalrunner.generate.documents import load_documents, parse
from tests.support import bombs

runner = CliRunner()
POLICY = (
    "# Leave\n\nFull-time staff get 25 days of paid annual leave a year, booked in the HR "
    "portal and approved by their manager within five working days.\n"
)
SECRET = "root:x:0:0:this line is outside the documents folder"


def _generate(folder: Path, stub, tmp_path: Path, **env: str):
    judge = json.dumps({"openai": {"base_url": stub.url, "model": "m"}, "cache": False})
    out = tmp_path / "suite.xlsx"
    result = runner.invoke(
        app,
        ["generate", str(folder), "--out", str(out), "--judge", judge],
        env={"COLUMNS": "400", **env},
    )
    return result, " ".join(result.output.split()), out


def _docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "leave.md").write_text(POLICY)
    return folder


def test_a_link_out_of_the_folder_is_refused_before_the_judge_is_asked(tmp_path, judge_stub):
    outside = tmp_path / "passwd"
    outside.write_text(SECRET)
    folder = _docs(tmp_path)
    (folder / "notes.txt").symlink_to(outside)
    result, message, out = _generate(folder, judge_stub, tmp_path)
    assert result.exit_code == 2, result.output
    assert "notes.txt" in message and "symbolic link that leads out" in message
    assert judge_stub.requests == [] and not out.exists()
    assert SECRET not in result.output


def test_a_link_to_a_folder_outside_is_not_followed(tmp_path):
    elsewhere = tmp_path / "etc"
    elsewhere.mkdir()
    (elsewhere / "passwd.txt").write_text(SECRET)
    folder = _docs(tmp_path)
    (folder / "more").symlink_to(elsewhere, target_is_directory=True)
    documents = load_documents(str(folder))
    assert [d.name for d in documents] == ["leave.md"]


def test_a_link_that_stays_inside_is_read(tmp_path):
    folder = _docs(tmp_path)
    (folder / "sub").mkdir()
    (folder / "sub" / "alias.md").symlink_to(folder / "leave.md")
    assert [d.name for d in load_documents(str(folder))] == ["leave.md", "sub/alias.md"]


def test_a_docx_bomb_is_refused_by_what_it_unpacks_to(tmp_path, judge_stub):
    folder = _docs(tmp_path)
    bomb = bombs.docx_bomb(folder / "handbook.docx", 30)
    assert bomb.stat().st_size < 200_000
    result, message, out = _generate(folder, judge_stub, tmp_path)
    assert result.exit_code == 2, result.output
    for words in ("handbook.docx", "unpacks to 30.0 MB", "limit of 20.0 MB"):
        assert words in message, (words, message)
    assert "EVALRUNNER_MAX_DOCUMENT_MB" in message
    assert judge_stub.requests == [] and not out.exists()


def test_a_plain_document_over_the_limit_is_refused_naming_the_setting(tmp_path, judge_stub):
    folder = _docs(tmp_path)
    (folder / "dump.txt").write_text("Leave is 25 days a year. " * 50_000)
    result, message, _ = _generate(folder, judge_stub, tmp_path, EVALRUNNER_MAX_DOCUMENT_MB="1")
    assert result.exit_code == 2, result.output
    assert "dump.txt" in message and "limit of 1.0 MB" in message
    assert "EVALRUNNER_MAX_DOCUMENT_MB" in message and judge_stub.requests == []


def test_a_pdf_is_held_to_the_limit_by_the_text_it_unpacks_to(tmp_path, monkeypatch):
    pdf = bombs.pdf_bomb(tmp_path / "b.pdf", 2)
    assert pdf.stat().st_size < 100_000
    monkeypatch.setenv("EVALRUNNER_MAX_DOCUMENT_MB", "1")
    with pytest.raises(ConfigError, match=r"b\.pdf: .*EVALRUNNER_MAX_DOCUMENT_MB"):
        parse("b.pdf", pdf.read_bytes())
    monkeypatch.setenv("EVALRUNNER_MAX_DOCUMENT_MB", "4")
    assert "25 days" in parse("b.pdf", pdf.read_bytes()).sections[0].text
