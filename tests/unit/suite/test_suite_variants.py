"""Hand-written variants: a row's variant_of links it to the case it varies."""

from __future__ import annotations

import pytest

from evalrunner.errors import SuiteError
from evalrunner.suite import read_suite

SUITE = """id,question,expected_answer,variant_of,Variant Kind
leave,How many days of annual leave?,25 days,,
leave-typo,How many dyas of anual leave?,25 days,leave,typed by hand
leave-para,How many days of yearly leave?,25 days,leave,
leave-neg,How many days of unpaid leave?,0 days,leave,antonym
"""


def test_variants_are_linked_to_their_original() -> None:
    leave, typo, para, neg = read_suite(SUITE.encode(), "s.csv").cases
    assert leave.perturbation is None
    assert typo.perturbation is not None and para.perturbation is not None
    assert (typo.perturbation.of, typo.perturbation.kind, typo.perturbation.name) == (
        "leave",
        "variant",
        "typed by hand",
    )
    assert typo.perturbation.original_question == "How many days of annual leave?"
    assert para.perturbation.name == "variant"  # no variant_kind: grouped as "variant"
    assert neg.perturbation is not None and neg.perturbation.expect_flip  # antonym: must flip
    assert not typo.perturbation.expect_flip
    assert "variant_of" not in typo.metadata


@pytest.mark.parametrize(
    ("rows", "message", "row"),
    [
        ("a,Q?,\nb,Q2?,zz\n", "no case has the id 'zz'", 3),
        ("a,Q?,a\n", "a case cannot be a variant of itself", 2),
        ("a,Q?,\nb,Q2?,a\nc,Q3?,b\n", "case 'b' is itself a variant; name the original", 4),
    ],
)
def test_a_bad_link_names_row_and_column(rows: str, message: str, row: int) -> None:
    with pytest.raises(SuiteError) as caught:
        read_suite(f"id,question,variant_of\n{rows}".encode(), "s.csv")
    assert caught.value.row == row and caught.value.column == "variant_of"
    assert message in str(caught.value)
