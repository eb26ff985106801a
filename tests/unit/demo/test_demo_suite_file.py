"""test_suites/demo-hr.xlsx is generated from DEMO_CASES and must not drift from it."""

from pathlib import Path

from evalrunner.demo.suite import REPO_SUITE, demo_suite_path, write_demo_suite
from evalrunner.suite import read_suite_file


def test_committed_xlsx_matches_the_source_of_truth(tmp_path: Path) -> None:
    fresh = read_suite_file(write_demo_suite(tmp_path / "demo-hr.xlsx"))
    committed = read_suite_file(REPO_SUITE)
    assert len(committed.cases) == 27
    # Regenerate with: python -c "from pathlib import Path; from evalrunner.demo.suite import
    # write_demo_suite; write_demo_suite(Path('test_suites/demo-hr.xlsx'))"
    assert [c.model_dump(exclude={"row"}) for c in committed.cases] == [
        c.model_dump(exclude={"row"}) for c in fresh.cases
    ]


def test_demo_suite_path_prefers_the_checkout() -> None:
    assert demo_suite_path() == REPO_SUITE
