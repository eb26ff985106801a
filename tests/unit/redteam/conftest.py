"""The Red team grader registers itself in the process's catalog when imported (as in a
user's process): every test here leaves the catalog, and ``sys.modules``, as it found them."""

from collections.abc import Iterator

import pytest

from tests.support.catalog import restored_catalog


@pytest.fixture(autouse=True)
def _catalog_restored() -> Iterator[None]:
    with restored_catalog("evalrunner.redteam.grader"):
        yield
