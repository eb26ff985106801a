"""Hand-written variants: a suite row whose ``variant_of`` cell names another row's id is a
variant of that case (a rephrasing, a typo, a reversed question) and is compared with it by
the robustness analysis, like a generated perturbation (see :mod:`evalrunner.perturb`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalrunner.errors import SuiteError
from evalrunner.sanitize import sanitize_value
from evalrunner.suite.cells import CellError, parse_text
from evalrunner.suite.model import VARIANT, Perturbation, TestCase


def link_variants(
    cases: list[TestCase],
    cells: Sequence[Mapping[str, Any]],
    error: Callable[[int, str, str], SuiteError],
) -> list[TestCase]:
    """``cases`` (in suite order) with each row that names a ``variant_of`` linked to its
    original. ``cells[i]`` are row i's canonical cells; ``error(i, column, message)`` builds
    the error that names row i's cell."""
    from evalrunner.perturb.registry import KINDS

    def cell(i: int, column: str) -> str | None:
        value = cells[i].get(column)
        if value is None:  # nearly every row: no variant_of cell
            return None
        try:
            return parse_text(sanitize_value(value)[0])
        except CellError as exc:
            raise error(i, column, str(exc)) from None

    links = [cell(i, "variant_of") for i in range(len(cases))]
    by_id = {c.case_id: (c, link) for c, link in zip(cases, links, strict=True)}
    out = []
    for i, (case, of) in enumerate(zip(cases, links, strict=True)):
        if of is None:
            out.append(case)
            continue
        original, its_link = by_id.get(of, (None, None))
        if original is None:
            problem = f"no case has the id {of!r}; give the id of the row this one varies"
        elif original.case_id == case.case_id:
            problem = "a case cannot be a variant of itself"
        elif its_link is not None:
            problem = f"case {of!r} is itself a variant; name the original case instead"
        else:
            kind = cell(i, "variant_kind") or VARIANT
            known = KINDS.get(kind)
            link = Perturbation(
                of=of,
                kind=VARIANT,
                name=kind,
                original_question=original.question,
                expect_flip=known is not None and known.expect_flip,
            )
            out.append(case.model_copy(update={"perturbation": link}))
            continue
        raise error(i, "variant_of", problem)
    return out
