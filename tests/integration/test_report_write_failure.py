"""A write failure is a failed run, not a failed gate (issue 27, item 7).

``evalrunner run`` in a child process whose file-size limit (RLIMIT_FSIZE, as a quota or a
nearly full disk would) lets the small report files through and stops report.html: the run
exits 3 with one line naming the failure and the files it left, writes no manifest (the
set is never a baseline), and ``--resume`` then writes the reports without calling the
target again.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.loopback_http import Loopback

pytestmark = pytest.mark.slow

EVALRUNNER = str(Path(sys.executable).parent / "evalrunner")
#: Above every case record and the small reports, below report.html (~27 KB for two cases).
FILE_SIZE_LIMIT = 20_000


def limited_file_size() -> None:  # in the child, before exec (Python ignores SIGXFSZ)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def evalrunner(suite: Path, url: str, out: Path, *extra: str, limit: bool = False):
    return subprocess.run(
        [
            EVALRUNNER,
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"url": url, "name": "disk"}),
            "--metric",
            "Token F1",
            "--out",
            str(out),
            "--quiet",
            # the second case's answer is below its threshold: only the writing is tested here
            "--fail-on",
            "errors",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited_file_size if limit else None,
    )


def test_reports_that_cannot_be_written_exit_3_with_one_line_and_no_manifest(tmp_path):
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\nAnd sick?,10\n", "utf-8")
    out = tmp_path / "out"
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        failed = evalrunner(suite, f"{server.url}/ask", out, limit=True)
        assert failed.returncode == 3, failed.stdout + failed.stderr
        assert "Traceback" not in failed.stderr
        (line,) = [line for line in failed.stderr.splitlines() if line.strip()]
        assert line.startswith("error: the reports could not be written: File too large")
        folder = out / "test-reports" / "disk"
        written = sorted(p.name for p in folder.iterdir() if not p.name.endswith("claim.json"))
        assert written and not any(name.endswith("manifest.json") for name in written)
        assert not any(name.endswith("report.html") for name in written)  # no half file
        for name in written:  # every file it left is named
            assert name in line
        run_id = next((out / "runs").iterdir()).name
        assert f"--resume {run_id}" in line
        calls = len(server.requests)
        assert calls == 1 + 2  # the pre-flight's probe, then the two cases

        # Once there is room: the reports are written, the target is not called again.
        done = evalrunner(suite, f"{server.url}/ask", out, "--resume", run_id)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.requests) == calls
        manifests = list(folder.glob("*manifest.json"))
        assert len(manifests) == 1
        summary = json.loads(
            manifests[0]
            .with_name(manifests[0].name.replace("manifest", "summary"))
            .read_text("utf-8")
        )
        assert summary["run_id"] == run_id and summary["answered"] == 2
        # the next run names the unfinished set the failed copy left
        assert "was never finished (no manifest" in done.stderr
