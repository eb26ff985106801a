"""ARCHITECTURE.md stays true (issue 30, item 7): every file or folder it names in backticks
exists in this repository, so a newcomer who follows it never lands on a moved or deleted
module, and it names nothing outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")

#: Where a path the page writes relative to a package is looked up (it writes
#: ``pipeline/prepare.py`` for ``evalrunner/pipeline/prepare.py``, ``templates/…`` for the
#: report templates).
BASES = (ROOT, ROOT / "evalrunner", ROOT / "evalrunner" / "reports")
#: Keys of the run bucket and folders a run writes: named by the page, not files of the tree.
RUNTIME_PREFIXES = ("runs/", "test-reports/", "judge-cache/", "test-suites/", "~", "$")
FILE = re.compile(r"\.(py|md|json|j2|css|js|toml|xsd|txt|csv|xlsx)$")


def named_paths() -> list[str]:
    """The backticked tokens that are paths: with a folder, or a file name with an extension
    (a dotted ``module.function`` after a folder is read as its module's file)."""
    out = []
    for token in re.findall(r"`([^`\s]+)`", TEXT):
        token = token.rstrip(",.;:")
        if any(c in token for c in "(){}<>*=[]") or token.startswith(RUNTIME_PREFIXES):
            continue
        folder, _, last = token.rpartition("/")
        if folder and "." in last and not FILE.search(token):
            token = f"{folder}/{last.split('.')[0]}.py"  # pipeline/run_case.run_batch
        if "/" in token or FILE.search(token):
            out.append(token)
    return out


def exists(token: str) -> bool:
    if "/" in token.rstrip("/"):
        return any((base / token).exists() for base in BASES)
    # a bare file name, written inside its package's row (`_client.py` in the judge's)
    return any(p.name == token.rstrip("/") for p in ROOT.rglob(token.rstrip("/")))


def test_the_page_names_paths() -> None:
    assert len(named_paths()) > 100  # the check reads the page's paths at all


def test_every_path_the_page_names_exists_in_this_repository() -> None:
    missing = [t for t in named_paths() if not exists(t)]
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_the_page_names_nothing_outside_the_repository() -> None:
    assert "shared/" not in TEXT and "../" not in TEXT
