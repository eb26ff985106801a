"""No secret reaches the output folder or the logs (issue 11, item 4; issue 27, item 4), end to
end through the embedded engine: a loopback target echoes every request header and its query
string (and then every credential in every spelling: other cases, base64, the decoded Basic
credential), in its answers and in a 500 error body, and every file written (xlsx unzipped),
stdout, stderr and the logs are searched."""

from __future__ import annotations

import base64
import json
import logging
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline
from tests.support.judge_stub import JudgeStub
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
    from evalrunner.reports.writers.publish import local_complete_sets, local_verified

    folder = next(out.glob("test-reports/*"))
    sets = list(local_complete_sets(folder))
    assert len(sets) == 1
    _, _, manifest = sets[0]
    for key in manifest["files"]:
        assert local_verified(out, manifest, key) is not None, key


# -- issue 27, item 4: by value, whatever the name, in every spelling --------------------------

BASIC_USER, BASIC_PASSWORD = "basic-user-31", "basic-pw-2222-zz"
#: Sent under names no by-name rule knows, in the URL and in the Authorization header.
SENT = {
    "x_pass": "pass-77aa99-Qx",
    "x_api": "api-88bb00-Rw",
    "access_key": "acc-55cc11-Tv",
    "url_user": "qa-user-8080",
    "url_password": "url-pass-7777",
    "basic_user": BASIC_USER,
    "basic_password": BASIC_PASSWORD,
    "short": "plan",  # shorter than 8: masked as a word of its own, never inside a word
    "judge_key": "jk-6a5b4c3d2e1f",
    "judge_query": "jq-0f9e8d7c",
}
BASIC = "Basic " + base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()


def spellings(value: str) -> list[str]:
    """What an echoing target may send back of a credential: as is, in other cases, base64
    (standard, URL-safe, unpadded) and URL-encoded."""
    raw = value.encode()
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [
        value,
        value.upper(),
        value.swapcase(),
        *encoded,
        *(e.rstrip("=") for e in encoded),
        quote(value, safe=""),
    ]


def echo_every_spelling(seen: Seen) -> Reply:
    """Echoes every credential it received (header values, query values, the decoded Basic
    credential) in every spelling; the BROKEN question gets the same in a 500 body."""
    query = parse_qsl(urlsplit(seen.path).query)
    received = [v for k, v in seen.headers.items() if k.lower().startswith("x-")]
    received += [v for _, v in query]
    scheme, _, credential = seen.headers.get("Authorization", "").partition(" ")
    if scheme == "Basic":
        decoded = base64.b64decode(credential).decode()
        received += [decoded, *decoded.split(":", 1)]
    echo = " | ".join(s for value in received for s in spellings(value))
    text = f"An explanation of the planet's plan: {echo}"
    if "BROKEN" in seen.json().get("question", ""):
        return Reply(500, {"error": f"bad request, you sent {echo}"})
    return Reply(200, {"answer": text, "contexts": [echo]})


def judge_echoing_its_credentials(stub: JudgeStub) -> Callable[..., Any]:
    """A judge that writes the key it got (under a header of its own name) and the query
    value of its URL back into its reason, in every spelling: reasons reach every report."""

    def responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        key = stub.requests[-1].headers["X-Judge-Pass"]
        echo = " | ".join(s for v in (key, SENT["judge_query"]) for s in spellings(v))
        return {"reason": f"I was called with {echo}", "score": 3}

    return responder


def test_every_credential_sent_is_masked_in_every_spelling_whatever_its_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    judge_stub: JudgeStub,
) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_BASIC", BASIC)
    monkeypatch.setenv("EVALRUNNER_SECRET_JUDGE", SENT["judge_key"])
    judge_stub.responder = judge_echoing_its_credentials(judge_stub)
    suite = tmp_path / "leaks.csv"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "out"
    with Loopback(responder=echo_every_spelling) as server:
        event = {
            "key": "test-suites/leaks.csv",
            "iterations": 1,
            "target": {
                "url": (
                    f"http://{SENT['url_user']}:{SENT['url_password']}@127.0.0.1:{server.port}"
                    f"/ask?access_key={SENT['access_key']}&lang=en"
                ),
                "max_retries": 0,
                "headers": {"X-Pass": SENT["x_pass"], "X-Api": SENT["x_api"], "X-Short": "plan"},
                "headers_from_env": {"Authorization": "EVALRUNNER_SECRET_BASIC"},
            },
            "metrics": ["Rouge Metric", "Exact match", "Relevance (1-5)"],
            "judge": {
                "openai": {
                    "base_url": f"{judge_stub.url}?access_key={SENT['judge_query']}",
                    "model": "stub-judge",
                    "api_key_env": "EVALRUNNER_SECRET_JUDGE",
                    "api_key_header": "X-Judge-Pass",
                },
                "cache": False,
            },
        }
        event_path = tmp_path / "event.json"
        event_path.write_text(json.dumps(event), encoding="utf-8")
        with caplog.at_level(logging.DEBUG):
            result = CliRunner().invoke(
                app,
                ["start", "--event", str(event_path), "--suite", str(suite), "--out", str(out)],
                catch_exceptions=False,
            )
        (first, *_) = server.requests
    # the target got every credential (the test would prove nothing otherwise)
    assert first.headers["X-Pass"] == SENT["x_pass"] and first.headers["Authorization"] == BASIC
    assert f"access_key={SENT['access_key']}" in first.path
    texts = every_text(out)
    assert any("details.xlsx!xl/" in name for name in texts)
    joined = "\n".join(texts.values())
    assert "An explanation of the planet's ***: ***" in joined  # echoed, and masked
    assert "bad request, you sent ***" in joined
    assert judge_stub.requests[0].headers["X-Judge-Pass"] == SENT["judge_key"]
    assert "I was called with ***" in joined  # the judge's reason is in the reports, masked

    places = {**texts, "logs": caplog.text, "stdout": result.stdout, "stderr": result.stderr}
    for name, value in SENT.items():
        for spelling in spellings(value) if name != "short" else []:
            leaks = [where for where, text in places.items() if spelling.lower() in text.lower()]
            assert not leaks, f"{name} as {spelling!r} leaked into {leaks}"
    # a short value is masked where it stands alone, and nowhere inside a word
    assert " plan " not in joined and "| plan |" not in joined
    assert "explanation" in joined and "planet" in joined
