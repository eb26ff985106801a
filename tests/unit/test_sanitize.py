"""The one text cleaner at the boundary: what it replaces, what it keeps, what it reports."""

from __future__ import annotations

import json

from evalrunner.sanitize import cap_text, is_clean, sanitize_text, sanitize_value


def test_lone_surrogates_and_controls_become_replacement_characters():
    text, found = sanitize_text("a\ud800b\x00c\x1bd\x7f")
    assert text == "a\ufffdb\ufffdc\ufffdd\ufffd"
    text.encode("utf-8")  # storable now
    assert found.counts == {"lone surrogate": 1, "control character": 3}
    assert found.describe("answer") == (
        "answer: 3 control characters, 1 lone surrogate replaced by U+FFFD"
    )


def test_tab_and_line_breaks_and_real_astral_characters_are_kept():
    original = "line 1\r\nline\t2\n😀 " + json.loads('"\\ud83d\\ude00"')
    text, found = sanitize_text(original)
    assert text == original and not found


def test_nested_values_are_cleaned_keys_included():
    value, found = sanitize_value({"k\ud800": ["x\x00", 3, None, {"y": "\udfff"}]})
    assert value == {"k\ufffd": ["x\ufffd", 3, None, {"y": "\ufffd"}]}
    assert found.counts == {"lone surrogate": 2, "control character": 1}


def test_is_clean_finds_a_bad_character_at_any_depth_keys_included():
    assert is_clean({"k": ["x", 3, None, ("y", {"z": "fine 😀\t\r\n"})]})
    assert not is_clean({"k": ["x", 3, None, ("y", {"z": "bad\x00"})]})
    assert not is_clean({"k\udfff": "v"})
    assert not is_clean(("a", "b\x7f"))


def test_a_clean_value_is_returned_as_it_is_and_nothing_is_counted():
    value = {"k": ["x", 3, None, {"y": "z"}]}
    cleaned, found = sanitize_value(value)
    assert cleaned is value and not found and found.counts == {}
    dirty = ("a", "b\x00")
    cleaned, found = sanitize_value(dirty)
    assert cleaned == ("a", "b\ufffd") and isinstance(cleaned, tuple)
    assert found.counts == {"control character": 1}


def test_cap_text_cuts_only_what_is_longer():
    assert cap_text("abc", 3) == ("abc", False)
    assert cap_text("abcd", 3) == ("abc", True)
