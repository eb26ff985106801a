"""No secret reaches the output folder or the logs (issue 11, item 4), end to end through the
embedded engine: a loopback target echoes every request header and its query string, in its
answers and in a 500 error body, and every file written (xlsx unzipped) is searched."""

from __future__ import annotations

import json
import logging
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline
from tests.support.loopback_http import Loopback, Reply, Seen

pytestmark = pytest.mark.slow

ENV_SECRET = "Bearer env-tok-9f8e7d6c5b4a"
SECRETS = {
    "env": "env-tok-9f8e7d6c5b4a",
    "url_password": "url-pass-7777",
    "query_api_key": "query-key-5555",
    "query_token": "query-token-6666",
    "functions_key": "fn-key-3333",
    "apim_key": "apim-key-4444",
}
SUITE = """id,question,expected_answer
c1,What is the leave policy?,25 days
c2,BROKEN echo in a 500 please,nothing
c3,What about pensions?,matched
"""


def echo_everything(seen: Seen) -> Reply:
    """Answers with everything it was sent; a 500 with the same for questions with BROKEN."""
    echo = f"path={seen.path} headers={seen.headers}"
    if "BROKEN" in seen.json().get("question", ""):
        return Reply(500, {"error": f"bad request, you sent {echo}"})
    return Reply(200, {"answer": f"You sent {echo}", "contexts": [echo]})


@pytest.fixture
def echo() -> Iterator[Loopback]:
    with Loopback(responder=echo_everything) as server:
        yield server


def every_text(folder: Path) -> dict[str, str]:
    """Each file under ``folder`` as text; xlsx files as the text of every part inside."""
    texts = {}
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    texts[f"{path}!{name}"] = archive.read(name).decode("utf-8", "replace")
        else:
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return texts


def test_no_secret_in_any_output_file_or_log(
    echo: Loopback,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_QA_TOKEN", ENV_SECRET)
    url = (
        f"http://qa-user:{SECRETS['url_password']}@127.0.0.1:{echo.port}/ask"
        f"?api_key={SECRETS['query_api_key']}&Token={SECRETS['query_token']}&lang=en"
    )
    event = {
        "key": "test-suites/leaks.csv",
        "iterations": 1,
        "target": {
            "url": url,
            "max_retries": 0,
            "headers": {
                "X-Functions-Key": SECRETS["functions_key"],
                "Ocp-Apim-Subscription-Key": SECRETS["apim_key"],
            },
            "headers_from_env": {"Authorization": "EVALRUNNER_SECRET_QA_TOKEN"},
        },
        "metrics": ["Rouge Metric", "Exact match"],
    }
    out = tmp_path / "out"
    with caplog.at_level(logging.DEBUG):
        result = LocalEngine(pipeline=local_pipeline).run(event, suite=SUITE.encode(), out_dir=out)

    # the target really got (and echoed) the secrets: the test would prove nothing otherwise
    assert result.summary.items == 3 and result.summary.target_errors == 1
    texts = every_text(out)
    assert any(name.endswith("report.html") for name in texts)
    assert any("details.xlsx!xl/" in name for name in texts)
    joined = "\n".join(texts.values())
    assert "You sent path=/ask?" in joined  # the answer's echo is in the reports...
    assert "bad request, you sent" in joined  # ...and so is the 500 error body
    assert "***" in joined

    captured = capsys.readouterr()
    places = {**texts, "logs": caplog.text, "stdout": captured.out, "stderr": captured.err}
    places["summary"] = result.summary.model_dump_json()
    places["output"] = json.dumps(result.output)
    for name, value in SECRETS.items():
        leaks = [where for where, text in places.items() if value in text]
        assert not leaks, f"{name} leaked into {leaks}"

    # Redaction rewrote files as they were stored; the set's manifest hashes what was stored,
    # so the run is still a complete set that a later run can take as its baseline.
    from evalrunner.reports.publish import local_complete_sets, local_verified

    folder = next(out.glob("test-reports/*"))
    sets = list(local_complete_sets(folder))
    assert len(sets) == 1
    _, _, manifest = sets[0]
    for key in manifest["files"]:
        assert local_verified(out, manifest, key) is not None, key
