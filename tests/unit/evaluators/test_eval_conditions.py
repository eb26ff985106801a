"""The condition language: grammar, list form, explanations, errors and regex timeouts."""

import pickle
import time

import pytest

from evalrunner.evaluators.conditions import (
    MAX_DEPTH,
    REGEX_TIMEOUT,
    ConditionError,
    ConditionTimeout,
    parse_condition,
)
from tests.support.scaling import BACKSTOP_SECONDS

EXAMPLE = '("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"'


def holds(condition, text):
    return parse_condition(condition).holds(text)


# --- Expression form -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Brazil has 15,969 million", True),
        ("brazil: 15969 Million", True),
        ("BRAZIL has 15,969 million", False),  # text operands are case-sensitive
        ("Brazil has 15,969 billion", False),
        ("Brazil has 15,969 million Real", False),
    ],
)
def test_evaluators_md_example(text, expected):
    assert holds(EXAMPLE, text) is expected


def test_and_binds_tighter_than_or():
    c = '"a" OR "b" AND "c"'  # = "a" OR ("b" AND "c")
    assert holds(c, "a")
    assert not holds(c, "b")
    assert holds(c, "bc")
    assert not holds('("a" OR "b") AND "c"', "a")


def test_not_binds_tighter_than_and_and_parentheses_override():
    assert holds('NOT "a" AND "b"', "b")
    assert not holds('NOT "a" AND "b"', "ab")
    assert holds('NOT ("a" AND "b")', "a")
    assert not holds('NOT ("a" AND "b")', "ab")
    assert holds('NOT NOT "a"', "a")
    assert not holds('NOT "a" OR NOT "b"', "ab")


def test_keywords_are_case_insensitive():
    assert holds('"x" and not "y" Or "z"', "x")
    assert holds('REGEXP("^x")', "xy")
    assert not holds('"x" and not "y"', "xy")


def test_escapes_in_text_operands():
    assert holds(r'"say \"hi\""', 'they say "hi"')
    assert holds(r'"C:\\dir"', "C:\\dir")
    assert holds(r'"C:\dir"', "C:\\dir")  # an unknown escape is kept as written
    assert holds(r'"a\nb"', "a\nb")
    assert not holds(r'"a\nb"', "a b")
    assert holds(r'"tab\there"', "tab\there")


def test_backslashes_in_regexp_reach_the_regex_engine():
    assert holds(r'regexp("\bper\s+week\b")', "3 days per  week")
    assert not holds(r'regexp("\bper\s+week\b")', "3 days perweek")
    assert holds(r'regexp("\d{2,}")', "in 15 days")
    assert holds(r'regexp("say \"hi\"")', 'say "hi"')


def test_describe_round_trips():
    for src in [
        EXAMPLE,
        '"a" OR "b" AND NOT "c"',
        'NOT ("a" OR "b") AND "q\\"uote\\\\"',
        r'regexp("a\"b\\") OR "x"',
    ]:
        c = parse_condition(src)
        again = parse_condition(c.describe())
        assert again.describe() == c.describe()
        for text in ["a", "b", "c", "bc", 'q"uote\\', 'a"b\\', "x", "nothing"]:
            assert again.holds(text) == c.holds(text)
    assert parse_condition('"a"   or ("b")').describe() == '"a" OR "b"'


def test_explain_names_the_deciding_operand():
    c = parse_condition(EXAMPLE)
    assert c.explain("Brazil 15,969 million in Real") == 'contains "Real" (excluded by NOT)'
    assert "no match for regexp" in c.explain("Brazil 16,000 million")
    assert c.explain("Chile 15,969 million") == 'none of "Brazil" | "brazil" holds'
    ok = c.explain("brazil 15,969 Million")
    assert 'contains "brazil"' in ok and 'matches "15,969 Million"' in ok


# --- List form --------------------------------------------------------------------------------


def test_list_form_every_item_must_hold_case_sensitive():
    assert holds(["15,969", "Brazil"], "Brazil: 15,969")
    assert not holds(["15,969", "Brazil"], "brazil: 15,969")
    assert not holds(["15,969", "Brazil"], "Brazil: 15969")


def test_nested_list_is_any_of_and_regexp_items():
    c = ["40", ["EUR", "euro", "REGEXP:€\\s?\\d"], "REGEXP:(?i)per day"]
    assert holds(c, "40 euro Per Day")
    assert holds(c, "costs € 40 per day")
    assert not holds(c, "40 dollars per day")
    assert not holds(c, "40 EUR a day")
    assert holds(["regexp:^a"], "abc")  # the prefix is case-insensitive
    assert holds([["a", ["b", "c"]]], "c")  # a list inside a nested list: more alternatives


def test_list_explain_names_the_item_path():
    c = parse_condition(["40", ["EUR", "euro"], "REGEXP:days?"])
    assert c.explain("40 dollars per day") == 'item [1]: none of "EUR" | "euro" holds'
    assert c.explain("40 EUR a week") == 'item [2]: no match for regexp("days?")'
    assert 'item [1][1]: contains "euro"' in c.explain("40 euro a day")
    assert c.describe() == '"40" AND ("EUR" OR "euro") AND regexp("days?")'


def test_parsed_conditions_are_cached():
    assert parse_condition(EXAMPLE) is parse_condition(EXAMPLE)
    assert parse_condition(["a", ["b"]]) is parse_condition(["a", ["b"]])


# --- Errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "position", "fragment"),
    [
        ('("a" AND "b"', 0, "unbalanced '('"),
        ('"a" AND ("b" OR ("c")', 8, "unbalanced '('"),
        ('"a" AND "b")', 11, "unbalanced ')'"),
        ('"a" AND Brazil', 8, "unknown token 'Brazil'"),
        ("'a'", 0, "double quotes"),
        ('"a" && "b"', 4, "use AND"),
        ('"a" AND regexp("15(,969")', 8, 'invalid regexp "15(,969"'),
        ('""', 0, "empty text operand"),
        ('"a" OR regexp("")', 7, "empty pattern"),
        ('"a" AND', 7, "missing operand after 'AND'"),
        ('"a" AND OR "b"', 8, "missing operand before OR"),
        ("()", 0, "empty parentheses"),
        ('"a" "b"', 4, "expected AND or OR"),
        ('"abc', 0, "unterminated string"),
        ('regexp "x"', 0, 'regexp("pattern")'),
        ("   ", 0, "empty condition"),
    ],
)
def test_expression_errors_have_positions(src, position, fragment):
    with pytest.raises(ConditionError) as info:
        parse_condition(src)
    assert info.value.position == position
    assert fragment in info.value.message
    assert str(info.value).endswith(f"at position {position}")


@pytest.mark.parametrize(
    ("items", "path", "fragment"),
    [
        (["a", ["b", "REGEXP:("]], "[1][1]", 'invalid regexp "("'),
        (["a", []], "[1]", "empty list"),
        (["", "b"], "[0]", "empty text item"),
        (["REGEXP:"], "[0]", "empty pattern"),
        (["a", ["b", 5]], "[1][1]", "only strings and nested lists"),
    ],
)
def test_list_errors_name_the_item_path(items, path, fragment):
    with pytest.raises(ConditionError) as info:
        parse_condition(items)
    assert info.value.position == path
    assert fragment in info.value.message
    assert str(info.value).endswith(f"at item {path}")


def test_a_condition_must_be_a_string_or_list():
    with pytest.raises(ConditionError, match="not int"):
        parse_condition(5)  # type: ignore[arg-type]


def test_deep_nesting_is_an_error_not_a_recursion_crash():
    deep = "(" * (MAX_DEPTH + 5) + '"a"' + ")" * (MAX_DEPTH + 5)
    with pytest.raises(ConditionError, match="nested more than"):
        parse_condition(deep)
    with pytest.raises(ConditionError, match="nested more than"):
        parse_condition("NOT " * 500 + '"a"')
    nested: list = ["a"]
    for _ in range(MAX_DEPTH + 5):
        nested = [nested]
    with pytest.raises(ConditionError, match="nested more than"):
        parse_condition(nested)
    assert holds("(" * 20 + '"a"' + ")" * 20, "a")


# --- Untrusted regexes ------------------------------------------------------------------------


@pytest.mark.parametrize("condition", [["REGEXP:(a+)+$"], '"a" AND regexp("(a+)+$")'])
def test_catastrophic_backtracking_times_out_quickly(condition):
    c = parse_condition(condition)
    start = time.monotonic()
    with pytest.raises(ConditionTimeout) as info:
        c.holds("a" * 5000 + "b")
    # Without the timeout this match never ends (2**5000 paths); any finite bound proves it
    # stopped, and a generous one cannot flake on a loaded machine.
    assert time.monotonic() - start < BACKSTOP_SECONDS
    assert isinstance(info.value, ConditionError) and isinstance(info.value, ValueError)
    assert f"timed out after {REGEX_TIMEOUT:g} s" in str(info.value)
    assert info.value.position == ("[0]" if isinstance(condition, list) else 8)
    assert c.holds("a" * 50)  # the same pattern is fine on benign text


def test_errors_survive_pickling():
    for exc in (ConditionError("bad", 3), ConditionTimeout("slow", "[0]")):
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is type(exc)
        assert (again.message, again.position, str(again)) == (
            exc.message,
            exc.position,
            str(exc),
        )
