"""The viewer over a bucket prefix (the deployed runner's bucket), with moto's S3 standing in
for AWS: runs listed and opened from the objects under the prefix only, labels written back
beside the run in the bucket, and no key outside the prefix reachable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from starlette.testclient import TestClient

from evalrunner.viewer.app import create_app
from evalrunner.viewer.labels import Label, adding, parse_labels
from evalrunner.viewer.source import UPDATE_TRIES, S3Source, UnsafeKey, UpdateConflict, open_source

BUCKET = "runner-bucket"
TOKEN = "s3-token"
HOST = "http://127.0.0.1"


@pytest.fixture
def s3(runs_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for path in runs_folder.glob("test-reports/evalrunner-demo-hr/*"):
            key = f"team-a/{path.relative_to(runs_folder).as_posix()}"
            client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
        # another team's run beside the prefix: never listed, never reachable
        other = next(runs_folder.glob("test-reports/hostile*/*-summary.json"))
        client.put_object(Bucket=BUCKET, Key="team-b/x-summary.json", Body=other.read_bytes())
        client.put_object(Bucket=BUCKET, Key="secret.txt", Body=b"top secret")
        yield client


def test_runs_under_the_prefix_are_served_and_labels_go_back_to_the_bucket(s3: Any) -> None:
    source = open_source(f"s3://{BUCKET}/team-a")
    assert isinstance(source, S3Source)
    client = TestClient(create_app(source, token=TOKEN), base_url="http://127.0.0.1")
    page = client.get("/")
    assert page.status_code == 200
    assert page.text.count('class="run-link"') == 2
    assert "hostile" not in page.text
    run_id = page.text.split('class="run-link" href="/runs/')[1].split('"')[0]
    assert client.get(f"/runs/{run_id}").status_code == 200
    assert client.get(f"/runs/{run_id}/cases/0").status_code == 200
    answer = client.post(
        f"/runs/{run_id}/labels",
        data={"token": TOKEN, "n": "0", "metric": "ROUGE-L", "verdict": "fail", "note": "n"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    (labels,) = [k for k in keys if k.endswith("labels.csv")]
    assert labels.startswith("team-a/test-reports/evalrunner-demo-hr/")
    body = s3.get_object(Bucket=BUCKET, Key=labels)["Body"].read().decode()
    assert body.splitlines()[1].endswith(",fail,n")
    assert client.get(f"/runs/{run_id}/export.zip").headers["content-type"] == "application/zip"


def test_keys_cannot_leave_the_prefix(s3: Any) -> None:
    source = S3Source.of(f"s3://{BUCKET}/team-a", client=s3)
    for key in ("../secret.txt", "/secret.txt", "a/../../secret.txt", "..\\secret.txt"):
        with pytest.raises(UnsafeKey):
            source.read(key)
    with pytest.raises(UnsafeKey):
        source.exists("../secret.txt")


def test_a_url_without_a_bucket_is_refused() -> None:
    from evalrunner.errors import StorageError

    with pytest.raises(StorageError, match="s3://bucket"):
        open_source("s3://")


LABELS_KEY = "test-reports/evalrunner-demo-hr/shared-labels.csv"


def _label(case_id: str, metric: str = "ROUGE-L") -> Label:
    return Label(case_id=case_id, iteration=1, metric=metric, human_pass=False, note=case_id)


@pytest.mark.parametrize("existing", [False, True], ids=["first-save", "file-exists"])
def test_two_reviewers_saving_at_once_keep_both_labels(s3: Any, existing: bool) -> None:
    """Reviewer B saves between reviewer A's read and A's write (each on their own viewer):
    A's conditional write is refused (If-None-Match: * with no file yet, If-Match on the
    ETag read otherwise), A reads B's file and adds its label to it: neither label is lost."""
    mine = S3Source.of(f"s3://{BUCKET}/team-a", client=s3)
    theirs = S3Source.of(f"s3://{BUCKET}/team-a", client=s3)
    if existing:
        theirs.update(LABELS_KEY, adding(_label("earlier")), "text/csv")
    seen: list[bytes | None] = []

    def a_saves(current: bytes | None) -> bytes:
        seen.append(current)
        if len(seen) == 1:  # B's save lands after A's read, before A's write
            theirs.update(LABELS_KEY, adding(_label("from-b")), "text/csv")
        return adding(_label("from-a"))(current)

    mine.update(LABELS_KEY, a_saves, "text/csv")
    stored = {x.case_id for x in parse_labels(mine.read(LABELS_KEY))}
    assert stored == {"from-a", "from-b"} | ({"earlier"} if existing else set())
    assert len(seen) == 2  # refused once, then applied to B's file
    assert seen[1] is not None and b"from-b" in seen[1]


def test_a_save_that_loses_every_race_says_so_and_overwrites_nothing(s3: Any) -> None:
    mine = S3Source.of(f"s3://{BUCKET}/team-a", client=s3)
    theirs = S3Source.of(f"s3://{BUCKET}/team-a", client=s3)
    tries: list[int] = []

    def always_beaten(current: bytes | None) -> bytes:
        tries.append(1)
        theirs.update(LABELS_KEY, adding(_label(f"b-{len(tries)}")), "text/csv")
        return adding(_label("from-a"))(current)

    with pytest.raises(UpdateConflict, match="save it again"):
        mine.update(LABELS_KEY, always_beaten, "text/csv")
    stored = {x.case_id for x in parse_labels(mine.read(LABELS_KEY))}
    assert len(tries) == UPDATE_TRIES
    assert stored == {f"b-{n}" for n in range(1, UPDATE_TRIES + 1)}


def test_two_viewers_label_the_same_run_in_the_bucket(s3: Any) -> None:
    """Two reviewers' servers on one bucket prefix: each one's label ends up in the file."""
    apps = [
        TestClient(create_app(open_source(f"s3://{BUCKET}/team-a"), token=t), base_url=HOST)
        for t in ("token-a", "token-b")
    ]
    page = apps[0].get("/")
    run_id = page.text.split('class="run-link" href="/runs/')[1].split('"')[0]
    for n, (app, token) in enumerate(zip(apps, ("token-a", "token-b"), strict=True)):
        answer = app.post(
            f"/runs/{run_id}/labels",
            data={"token": token, "n": str(n), "metric": "ROUGE-L", "verdict": "fail"},
            follow_redirects=False,
        )
        assert answer.status_code == 303
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    (key,) = [k for k in keys if k.endswith("labels.csv")]
    labels = parse_labels(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert len(labels) == 2
