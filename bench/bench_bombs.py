"""Issue 27 item 3: the time and memory it takes to *refuse* each small-file bomb, and the
peak memory of reading the largest suites the limits let through.

Each measurement runs in a fresh Python process (so peaks do not mix): the reader is
imported, its RSS noted, the file read (or refused), and the peak RSS and the seconds of the
read alone reported. "extra RSS" is the peak minus the RSS after imports. The bombs are the
tests' own builders (tests/support/bombs.py) at the issue's sizes; the suites within the
limits are built here.

    python bench/bench_bombs.py            # all rows
    python bench/bench_bombs.py --only bombs
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import bombs  # noqa: E402

_MEASURE = """
import sys, time
def status_mb(field):  # VmRSS: now; VmHWM: the peak since the last reset
    with open("/proc/self/status") as f:
        line = next(l for l in f if l.startswith(field + ":"))
    return int(line.split()[1]) / 1024
kind, path = sys.argv[1], sys.argv[2]
if kind == "suite":
    from evalrunner.suite.readers import read_suite_file as read
else:
    from evalrunner.generate.documents import load_documents as read
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak to now: the imports' peak is not the read's
before = status_mb("VmRSS")
start = time.perf_counter()
try:
    result = read(path)
    outcome = f"read ({len(result.cases) if kind == 'suite' else len(result)} items)"
except Exception as exc:
    outcome = f"refused: {type(exc).__name__}: {str(exc)[:90]}"
seconds = time.perf_counter() - start
peak = status_mb("VmHWM")
print(f"{seconds:.2f}\\t{peak:.0f}\\t{peak - before:.0f}\\t{outcome}")
"""


def measure(kind: str, path: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, kind, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=True,
    )
    return done.stdout.strip().split("\t")


def _rows(n: int, text: int) -> list[dict[str, str]]:
    return [
        {
            "question": f"Question {i}: how many days of leave does a full-time employee get?",
            "expected_answer": ("Full-time staff get 25 days of annual leave a year. " * 40)[:text],
            "expected_contexts": json.dumps(["Leave policy: staff get 25 days. " * 10]),
        }
        for i in range(n)
    ]


def _many_keys(path: Path) -> Path:
    keys = ",".join(f'"k{i}":1' for i in range(2_500_000))
    path.write_text('[{"question":"q",' + keys + "}]")
    return path


def bomb_files(folder: Path) -> list[tuple[str, str, Path]]:
    docs = folder / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nFull-time staff get 25 days a year.\n")
    bombs.docx_bomb(docs / "handbook.docx", 1024)
    links = folder / "links"
    links.mkdir()
    (links / "passwd.txt").symlink_to("/etc/passwd")
    return [
        ("xlsx, 3,000,000 rows", "suite", bombs.xlsx_rows(folder / "rows.xlsx", 3_000_000)),
        (
            "xlsx, 3,000,000 rows, EVALRUNNER_MAX_SUITE_MB=1000",
            "suite-mb",
            bombs.xlsx_rows(folder / "rows.xlsx", 3_000_000),
        ),
        (
            "xlsx, 1 GB sharedStrings",
            "suite",
            bombs.xlsx_shared_strings(folder / "strings.xlsx", 1024),
        ),
        (
            "xlsx, 31 MB of 1-character shared strings",
            "suite",
            bombs.xlsx_shared_strings(folder / "tiny.xlsx", 31, item=1),
        ),
        (
            "xlsx, one cell at XFD1048576",
            "suite",
            bombs.xlsx_far_cell(folder / "far.xlsx", "XFD1048576"),
        ),
        ("JSON nested 100,000 deep", "suite", bombs.deep_json(folder / "deep.json", 100_000)),
        ("JSON, one case of 2,500,000 keys (30 MB)", "suite", _many_keys(folder / "keys.json")),
        ("docx, 1 GB of paragraphs (generate)", "docs", docs),
        ("link to /etc/passwd (generate)", "docs", links),
    ]


def within_limits(folder: Path) -> list[tuple[str, str, Path]]:
    """The largest suites the limits let through: about 30 MB of CSV / JSON, 50,000 xlsx
    rows, 600,000 cells, 31 MB of shared strings."""
    out: list[tuple[str, str, Path]] = []
    rows = _rows(39_000, 400)  # 3 columns: 117,000 cells
    path = folder / "limit.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out.append((f"CSV {path.stat().st_size / 2**20:.1f} MB, 39,000 rows", "suite", path))
    path = folder / "wide.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "expected_answer", *(f"meta{n}" for n in range(10))])
        for i in range(49_990):
            writer.writerow(
                [
                    f"Question {i}: how many days of leave do I get?",
                    *(f"{n} value of a metadata cell, unique {i}" for n in range(11)),
                ]
            )
    out.append(("CSV 49,990 rows x 12 columns (599,880 cells)", "suite", path))
    path = folder / "limit.json"
    path.write_text(json.dumps(_rows(36_000, 400)))
    out.append((f"JSON {path.stat().st_size / 2**20:.1f} MB, 36,000 cases", "suite", path))
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("suite")
    sheet.append(["question", "expected_answer"])
    for i in range(49_990):
        sheet.append([f"Question {i}: how many days of leave?", "25 days. " * 30])
    path = folder / "limit.xlsx"
    workbook.save(path)
    out.append(("xlsx 49,990 rows x 2 columns", "suite", path))
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("suite")
    sheet.append(["question", *(f"c{n}" for n in range(29))])
    for i in range(19_990):
        sheet.append([f"q{i}", *range(29)])
    path = folder / "dense.xlsx"
    workbook.save(path)
    out.append(("xlsx 19,990 rows x 30 small cells (599,700 cells)", "suite", path))
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("suite")
    sheet.append(["question", "expected_answer", *(f"meta{n}" for n in range(10))])
    for i in range(49_990):
        sheet.append([f"Question {i}: how many days?", "25 days.", *range(10)])
    path = folder / "template-wide.xlsx"
    workbook.save(path)
    out.append(("xlsx 49,990 rows x 12 columns (599,880 cells)", "suite", path))
    path = bombs.xlsx_shared_strings(folder / "within.xlsx", 31, item=64)
    out.append(("xlsx with 31 MB of shared strings (420,000 of 64 characters)", "suite", path))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["bombs", "limits"])
    args = parser.parse_args()
    print("| file | on disk | seconds | peak RSS MB | extra RSS MB | outcome |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases: list[tuple[str, str, Path]] = []
        if args.only != "limits":
            cases += bomb_files(folder)
        if args.only != "bombs":
            cases += within_limits(folder)
        for name, kind, path in cases:
            if kind == "suite-mb":
                os.environ["EVALRUNNER_MAX_SUITE_MB"] = "1000"
            files = list(path.rglob("*")) if path.is_dir() else [path]
            size = sum(p.lstat().st_size for p in files)
            seconds, peak, extra, outcome = measure("docs" if kind == "docs" else "suite", path)
            print(f"| {name} | {size / 2**20:.2f} MB | {seconds} | {peak} | {extra} | {outcome} |")
            if kind == "suite-mb":
                del os.environ["EVALRUNNER_MAX_SUITE_MB"]


if __name__ == "__main__":
    main()
