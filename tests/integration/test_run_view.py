"""``evalrunner run … --view``: the viewer opens on --out as the run starts (the browser is
asked to open its address), serves the run while it goes and after it, lists the finished
run with its pages, and stops on Ctrl-C with the run's own exit code."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from evalrunner.demo.suite import demo_suite_path


def read_until(process: subprocess.Popen[str], pattern: str) -> re.Match[str]:
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"{pattern!r} never printed; output: {''.join(seen)}")


def test_run_view_serves_the_run_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    out = tmp_path / "out"
    opened = tmp_path / "opened.txt"
    # webbrowser runs $BROWSER with the address: record it instead of opening a browser
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    process = subprocess.Popen(
        [
            sys.executable, "-m", "evalrunner.cli", "run",
            "--suite", str(demo_suite_path()),
            "--target", json.dumps({"lambdaArn": "evalrunner-demo-hr"}),
            "--out", str(out), "--fail-on", "never", "--quiet", "--view",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "BROWSER": str(browser), "COLUMNS": "200"},
    )  # fmt: skip
    try:
        url = read_until(process, r"evalrunner viewer: (http://127\.0\.0\.1:\d+/)").group(1)
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200
        read_until(process, r"still at")
        assert opened.read_text().strip() == url
        found: list[str] = []
        for _ in range(40):  # the viewer reuses its listing for up to 2 s
            with urllib.request.urlopen(url, timeout=30) as page:
                found = re.findall(r'class="run-link" href="/runs/([^"]+)"', page.read().decode())
            if found:
                break
            time.sleep(0.25)
        (run_id,) = found
        with urllib.request.urlopen(f"{url}live/{run_id}", timeout=30) as page:
            assert page.url.endswith(f"/runs/{run_id}")  # finished: its own pages
            assert "evalrunner-demo-hr" in page.read().decode()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
