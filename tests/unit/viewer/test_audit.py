"""Hostile input the viewer's author did not try (audit of issue 33): a query string the
runs page cannot read, an odd object in a bucket, run ids that are not URL-safe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalrunner.viewer.app import create_app
from evalrunner.viewer.source import LocalSource

TOKEN = "audit-token-0123456789"


@pytest.fixture
def folder(runs_folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(runs_folder, copy)
    return copy


@pytest.fixture
def client(folder: Path) -> TestClient:
    return TestClient(create_app(LocalSource(folder), token=TOKEN), base_url="http://127.0.0.1")


@pytest.mark.parametrize(
    ("query", "named"),
    [("page=-1", "page"), ("page=abc", "page"), ("size=0", "size"), ("since=" + "9" * 40, "since")],
)
def test_a_runs_query_it_cannot_read_is_a_clear_400(
    client: TestClient, query: str, named: str
) -> None:
    answer = client.get(f"/?{query}")
    assert answer.status_code == 400
    assert named in answer.text
    assert "content-security-policy" in answer.headers


def test_an_odd_key_in_a_bucket_is_listed_as_unreadable_not_a_dead_runs_page(
    runs_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 takes any key, ``..`` and empty parts included; the viewer never reads such a key
    (it could leave the prefix), and one of them must not hide every other run."""
    import boto3
    from moto import mock_aws

    from evalrunner.viewer.source import S3Source

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="audit-bucket")
        for path in runs_folder.glob("test-reports/evalrunner-demo-hr/*"):
            key = f"team/{path.relative_to(runs_folder).as_posix()}"
            s3.put_object(Bucket="audit-bucket", Key=key, Body=path.read_bytes())
        body = next(runs_folder.glob("test-reports/evalrunner-demo-hr/*-summary.json"))
        for odd in ("team/test-reports/x/../1-summary.json", "team/test-reports//2-summary.json"):
            s3.put_object(Bucket="audit-bucket", Key=odd, Body=body.read_bytes())
        for odd in ("team/runs/../resume.json", "team/runs//resume.json"):
            s3.put_object(Bucket="audit-bucket", Key=odd, Body=b'{"run_id": "x"}')
        client = TestClient(
            create_app(S3Source("audit-bucket", "team", s3), token=TOKEN),
            base_url="http://127.0.0.1",
        )
        page = client.get("/")
        assert page.status_code == 200
        assert page.text.count('class="run-link"') == 2
        assert "x/../1-summary.json" in page.text  # named among the unreadable
        live = client.get("/live")
        assert live.status_code == 200
        assert "live-link" not in live.text


def test_a_summary_whose_run_id_evalrunner_never_makes_is_not_linked(folder: Path) -> None:
    """A run's id goes into every link, redirect and htmx address of its pages; ids are
    ``[A-Za-z0-9][A-Za-z0-9._-]*`` (the event's RUN_ID_PATTERN), so a copied or hand-edited
    summary.json whose id holds ``/``, ``..``, ``?`` or ``#`` (a link to ``/runs/x/../y``
    opens run ``y``; ``/runs/a?b#c`` opens run ``a``) is named unreadable instead."""
    from evalrunner.event_schema import RUN_ID_PATTERN
    from evalrunner.viewer.store import RUN_ID

    assert RUN_ID.pattern == RUN_ID_PATTERN
    summary = next(folder.glob("test-reports/evalrunner-demo-hr/*-summary.json"))
    report = summary.with_name(summary.name.replace("summary", "report"))
    text = summary.read_text("utf-8")
    import json

    run_id = json.loads(text)["run_id"]
    bad_ids = ["x/../hostile-run", "hostile-run?a=1#b", "../compare", '"><b>x</b>']
    for n, bad in enumerate(bad_ids):
        copy = summary.parent / f"24030{n}-000000-summary.json"
        copy.write_text(text.replace(f'"{run_id}"', json.dumps(bad)), "utf-8")
        shutil.copy(report, copy.with_name(copy.name.replace("summary", "report")))
    (folder / "runs" / "a?b").mkdir(parents=True)
    (folder / "runs" / "a?b" / "resume.json").write_text('{"run_id": "a?b"}', "utf-8")
    client = TestClient(create_app(LocalSource(folder), token=TOKEN), base_url="http://127.0.0.1")
    page = client.get("/")
    assert page.status_code == 200
    links = [a.split('"')[0] for a in page.text.split('class="run-link" href="')[1:]]
    assert links and all(link.startswith("/runs/") for link in links)
    assert not [link for link in links if any(c in link for c in "?#&;") or ".." in link]
    assert page.text.count("24030") >= len(bad_ids)  # each named among the unreadable
    assert "live-link" not in client.get("/live").text


def _report_of(folder: Path) -> tuple[str, Path]:
    import json

    summary = sorted(folder.glob("test-reports/evalrunner-demo-hr/*-summary.json"))[0]
    report = summary.with_name(summary.name.replace("summary", "report"))
    return json.loads(summary.read_text("utf-8"))["run_id"], report


@pytest.mark.parametrize(
    ("row", "field"),
    [({"question": 1}, "question"), ({"categories": 5}, "row 0"), ({"perturbation": "x"}, "row 0")],
)
def test_a_report_whose_rows_lie_about_their_types_is_a_clear_error(
    client: TestClient, folder: Path, row: dict[str, object], field: str
) -> None:
    import json

    run_id, report = _report_of(folder)
    data = json.loads(report.read_text("utf-8"))
    data["rows"][0].update(row)
    report.write_text(json.dumps(data), "utf-8")
    for url in (f"/runs/{run_id}", f"/runs/{run_id}/cases/0", f"/compare?a={run_id}&b={run_id}"):
        answer = client.get(url)
        assert answer.status_code in (400, 404), url
        assert field in answer.text, url
    assert client.get("/").status_code == 200


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"case_id,iteration,human_verdict ROUGE-L\nx,abc,pass\n", "line 2"),
        (b"case_id,iteration,human_verdict ROUGE-L\nx,1,pass\xff\n", "UTF-8"),
    ],
)
def test_a_hand_edited_labels_file_it_cannot_read_is_named_not_a_500(
    client: TestClient, folder: Path, body: bytes, said: str
) -> None:
    run_id, report = _report_of(folder)
    report.with_name(report.name.replace("report.json", "labels.csv")).write_bytes(body)
    for url in (f"/runs/{run_id}", f"/runs/{run_id}/cases/0", f"/runs/{run_id}/calibration"):
        answer = client.get(url)
        assert answer.status_code == 400, url
        assert said in answer.text and "labels.csv" in answer.text, url


def test_a_long_note_in_a_hand_edited_labels_file_is_cut_not_fatal(
    client: TestClient, folder: Path
) -> None:
    run_id, report = _report_of(folder)
    labels = report.with_name(report.name.replace("report.json", "labels.csv"))
    labels.write_text(
        "case_id,iteration,human_verdict ROUGE-L,note ROUGE-L\nleave-01,1,pass," + "n" * 3000,
        "utf-8",
    )
    assert client.get(f"/runs/{run_id}").status_code == 200
    assert client.get(f"/runs/{run_id}/cases/0").status_code == 200


def test_labels_csv_defuses_formulas_as_details_csv_does_and_reads_them_back() -> None:
    from evalrunner.viewer.labels import Label, dump_labels, parse_labels

    label = Label(
        case_id='=HYPERLINK("http://x","y")',
        iteration=1,
        metric="m",
        human_pass=True,
        note="@SUM(A1)",
    )
    text = dump_labels([label]).decode("utf-8")
    row = text.splitlines()[1]
    assert row.startswith("\"'=HYPERLINK(") and row.endswith(",'@SUM(A1)")
    assert parse_labels(text.encode("utf-8")) == [label]


def test_a_huge_summary_is_named_unreadable_without_being_read(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalrunner.viewer import store

    huge = folder / "test-reports" / "evalrunner-demo-hr" / "240401-000000-summary.json"
    huge.write_bytes(b" " * (store.MAX_SUMMARY_BYTES + 1))
    read = LocalSource.read
    seen: list[str] = []

    def reading(self: LocalSource, key: str) -> bytes:
        seen.append(key)
        return read(self, key)

    monkeypatch.setattr(LocalSource, "read", reading)
    client = TestClient(create_app(LocalSource(folder), token=TOKEN), base_url="http://127.0.0.1")
    page = client.get("/")
    assert page.status_code == 200
    assert "240401-000000-summary.json" in page.text
    assert page.text.count('class="run-link"') >= 2
    assert not [k for k in seen if k.endswith("240401-000000-summary.json")]
