"""The cheap pre-checks of evalrunner/input_limits.py: exact counts across the chunks a zip
part is inflated in, the central directory's sizes, nesting measured without recursion."""

from __future__ import annotations

import io
import zipfile

import pytest

from evalrunner.errors import ConfigError
from evalrunner.input_limits import (
    json_too_deep,
    limit_from_env,
    xml_part_over,
    zip_unpacked_size,
)


def _zip(parts: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_rows_and_cells_are_counted_exactly_across_chunk_boundaries():
    """3 MB of rows of uneven length, prefixed elements among them: chunk ends fall inside
    elements, and no element is missed or counted twice."""
    rows = [
        (b'<x:row r="%d">' % n if n % 3 else b"<row>")
        + b'<c r="A%d"><v>%s</v></c>' % (n, b"7" * (n % 97))
        + (b"</x:row>" if n % 3 else b"</row>")
        for n in range(60_000)
    ]
    xml = b"<sheetData>" + b"".join(rows) + b"</sheetData>"
    assert len(xml) > 3 * 1024 * 1024
    data = _zip({"xl/worksheets/sheet1.xml": xml, "xl/styles.xml": b"<styleSheet/>"})
    # each limit one short of the truth: exceeded only once the very last element is counted
    assert xml_part_over(data, 59_999, 10**9) == ("xl/worksheets/sheet1.xml", "rows", 60_000)
    assert xml_part_over(data, 10**9, 59_999) == ("xl/worksheets/sheet1.xml", "cells", 60_000)
    assert xml_part_over(data, 60_000, 60_000) is None
    # <col>, <cols>, <rowBreaks> are not rows or cells
    assert xml_part_over(_zip({"a.xml": b"<cols><col/></cols><rowBreaks/>"}), 0, 0) is None


def test_the_central_directory_gives_the_unpacked_size():
    data = _zip({"a.xml": b"a" * 5_000_000, "b.bin": b"b" * 10})
    unpacked, packed = zip_unpacked_size(data)
    assert unpacked == 5_000_010 and packed < 50_000
    assert zip_unpacked_size(b"not a zip") is None


def test_nesting_is_measured_without_recursion():
    deep: list[object] = []
    node = deep
    for _ in range(100_000):  # far past Python's recursion limit
        child: list[object] = []
        node.append(child)
        node = child
    assert json_too_deep(deep)
    assert json_too_deep({"a": [[[{"b": 1}]]]}, limit=4)
    assert not json_too_deep({"a": [[[{"b": 1}]]]}, limit=5)
    assert not json_too_deep("text")


def test_a_limit_setting_must_be_a_positive_whole_number(monkeypatch):
    monkeypatch.setenv("EVALRUNNER_X", "1_000")
    assert limit_from_env("EVALRUNNER_X", 5) == 1000
    monkeypatch.setenv("EVALRUNNER_X", " ")
    assert limit_from_env("EVALRUNNER_X", 5) == 5
    for bad in ("0", "-3", "1.5", "lots"):
        monkeypatch.setenv("EVALRUNNER_X", bad)
        with pytest.raises(ConfigError, match=r"EVALRUNNER_X=.* is not a whole number above 0"):
            limit_from_env("EVALRUNNER_X", 5)


def test_json_keys_are_counted_without_parsing_colons_inside_strings_aside():
    import json

    from evalrunner.input_limits import json_keys

    doc = {"a": "x:y", 'b\\"c:': ["d:e", {"f": 1, "g": {"h": "i:\\"}}], "url": "http://x:80"}
    text = json.dumps(doc)
    assert json_keys(text) == 6
    assert json_keys(json.dumps([{"question": f"q{n}: why?"} for n in range(1000)])) == 1000
    assert json_keys("[]") == 0
