"""JSON suites: a list of case objects, ``{"cases": [...]}``, and H2O Eval Studio test suites
and test labs (several models' answers per case), read into source rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalrunner import input_limits
from evalrunner.errors import SuiteError
from evalrunner.suite.columns import (
    map_headers,
)
from evalrunner.suite.encoding import decode_text
from evalrunner.suite.rows import Row, metadata_value

_JSON_SHAPES = (
    'a list of case objects, {"cases": [...]}, an H2O Eval Studio test suite '
    '({"tests": [{"test_cases": [...]}]}) or an H2O test lab ({"dataset": {"inputs": '
    "[...]}})"
)


def read_json(data: bytes, source: str, max_cells: int) -> list[Row]:
    """The rows of a JSON suite of at most ``max_cells`` keys (its limits' cells)."""
    text = decode_text(data, source=source, kind="json")
    key_count = input_limits.json_keys(text)
    if key_count > max_cells:
        # Counted before parsing: an object of millions of keys costs seconds to parse.
        raise SuiteError(
            f"the suite holds {key_count:,} keys, over the limit of {max_cells:,} "
            f"cells; it was not read. Split the suite, or raise {input_limits.SUITE_CELLS_ENV}",
            source=source,
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(
            f"the file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            source=source,
        ) from None
    except RecursionError:
        # The json module has no depth limit of its own: it recurses once per level and
        # stops at Python's recursion limit with a RecursionError, a traceback rather than a
        # message. Deeper than that is certainly deeper than the limit below.
        doc, too_deep = None, True
    else:
        too_deep = input_limits.json_too_deep(doc)
    if too_deep:
        raise SuiteError(
            f"the JSON nests lists and objects more than {input_limits.MAX_JSON_DEPTH} levels "
            "deep; it was not read. A suite is a list of case objects, a few levels deep "
            "(this limit is fixed, so that the nesting cannot exhaust Python's stack)",
            source=source,
        )
    if isinstance(doc, list):
        return _json_rows(doc, source=source, path="")
    if isinstance(doc, dict):
        if "cases" in doc:
            return _json_rows(_json_list(doc, "cases", source), source=source, path="cases")
        if "tests" in doc:
            return _read_h2o_suite(doc, source)
        if any(k in doc for k in ("dataset", "raw_dataset", "inputs")):
            return _read_h2o_lab(doc, source)
        keys = ", ".join(f"'{k}'" for k in list(doc)[:10]) or "none"
        raise SuiteError(
            f"unrecognised JSON suite (top-level keys: {keys}); expected {_JSON_SHAPES}",
            source=source,
        )
    raise SuiteError(
        f"unrecognised JSON suite (a {type(doc).__name__} at the top level); expected "
        f"{_JSON_SHAPES}",
        source=source,
    )


def _json_list(doc: Mapping[str, Any], key: str, source: str, where: str = "") -> list[Any]:
    value = doc.get(key)
    if not isinstance(value, list):
        raise SuiteError(
            f"'{where}{key}' must be a list, found {type(value).__name__}", source=source
        )
    return value


def _json_row(
    item: Mapping[str, Any],
    *,
    number: int,
    where: str,
    source: str,
    preset: Mapping[str, tuple[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Row:
    """One JSON object -> row, through the same header aliases as the tabular formats.

    ``preset`` supplies canonical values the caller already resolved (H2O fields that need
    more than an alias), as canonical -> (key as written, value).
    """
    keys = [str(k) for k in item]
    hmap = map_headers(keys, source=source, row=number, letters=False, noun="keys", note=where)
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for canonical, pos in hmap.columns.items():
        labels[canonical] = keys[pos]
        values[canonical] = item[keys[pos]]
    for canonical, (label, value) in (preset or {}).items():
        if canonical in values:
            raise SuiteError(
                f"keys '{labels[canonical]}' and '{label}' both name the column "
                f"'{canonical}'; keep one of them ({where})",
                source=source,
                row=number,
            )
        values[canonical] = value
        labels[canonical] = label
    meta = {name: metadata_value(item[keys[pos]]) for pos, name in hmap.extras.items()}
    meta.update(metadata or {})
    return Row(row=number, values=values, labels=labels, metadata=meta, where=where)


def _json_rows(items: list[Any], *, source: str, path: str) -> list[Row]:
    rows: list[Row] = []
    for i, item in enumerate(items):
        where = f"{path}[{i}]" if path else f"item {i + 1}"
        if not isinstance(item, dict):
            raise SuiteError(
                f"{where} is not an object with a question; each case is an object such as "
                '{"question": "...", "expected_answer": "..."}',
                source=source,
                row=i + 1,
            )
        rows.append(_json_row(item, number=i + 1, where=where, source=source))
    return rows


def _h2o_condition(
    item: dict[str, Any], expression_key: str, list_key: str
) -> tuple[dict[str, tuple[str, Any]], dict[str, Any]]:
    """Resolve H2O's two condition fields into our one.

    H2O keeps the list form (``constraints`` / ``output_constraints``) and the expression
    (``condition`` / ``output_condition``) side by side; a case has one condition, so a
    non-empty expression wins and the list is kept in metadata so nothing is lost.
    """
    expression = item.pop(expression_key, None)
    constraints = item.pop(list_key, None)
    preset: dict[str, tuple[str, Any]] = {}
    metadata: dict[str, Any] = {}
    has_expression = isinstance(expression, str) and expression.strip()
    if has_expression:
        preset["condition"] = (expression_key, expression)
        if constraints:
            metadata[list_key] = constraints
    elif constraints:
        preset["condition"] = (list_key, constraints)
    return preset, metadata


def _read_h2o_suite(doc: Mapping[str, Any], source: str) -> list[Row]:
    """H2O Eval Studio test suite: ``{"tests": [{"documents", "test_cases": [...]}]}``.

    A test's ``documents`` are the corpus the RAG is built from, not retrieval ground truth
    for each case, so they go to metadata (``corpus``) rather than to expected_documents.
    """
    rows: list[Row] = []
    for t, test in enumerate(_json_list(doc, "tests", source)):
        if not isinstance(test, dict):
            raise SuiteError(f"tests[{t}] is not an object", source=source)
        test_meta: dict[str, Any] = {}
        if test.get("key"):
            test_meta["test_key"] = test["key"]
        if test.get("documents"):
            test_meta["corpus"] = test["documents"]
        for c, case in enumerate(_json_list(test, "test_cases", source, f"tests[{t}].")):
            where = f"tests[{t}].test_cases[{c}]"
            number = len(rows) + 1
            if not isinstance(case, dict):
                raise SuiteError(f"{where} is not an object", source=source, row=number)
            item = dict(case)
            preset, meta = _h2o_condition(item, "condition", "constraints")
            rows.append(
                _json_row(
                    item,
                    number=number,
                    where=where,
                    source=source,
                    preset=preset,
                    metadata={**test_meta, **meta},
                )
            )
    return rows


def _read_h2o_lab(doc: Mapping[str, Any], source: str) -> list[Row]:
    """H2O test lab: ``dataset.inputs[]`` (answers computed) or ``raw_dataset.inputs[]``.

    A lab holds one input row per (test case, model). A case here has one answer, so for
    each test case the row of the model listed first in ``models`` is kept (rows of models
    not listed come after, then file order); the model's key and name, and the names of
    the other models that answered, go to the case's metadata. Labs with one model per
    test case (the usual RAG lab, one model per corpus) keep every row. ``dataset`` is used
    when it has inputs, else ``raw_dataset`` (the suite before answers, so the target is
    called); an LLM dataset ``{"inputs": [...]}`` is read the same way.
    """
    section_name = next(
        (
            name
            for name in ("dataset", "raw_dataset")
            if isinstance(doc.get(name), dict) and doc[name].get("inputs")
        ),
        None,
    )
    section = doc[section_name] if section_name else doc
    prefix = f"{section_name}.inputs" if section_name else "inputs"
    inputs = section.get("inputs")
    if not isinstance(inputs, list):
        raise SuiteError(
            f"the test lab has no '{prefix}' list; expected {_JSON_SHAPES}", source=source
        )
    models = [m for m in doc.get("models") or [] if isinstance(m, dict)]
    rank = {m.get("key"): i for i, m in enumerate(models)}
    names = {m.get("key"): m.get("llm_model_name") or m.get("name") for m in models}

    chosen: dict[str, int] = {}  # test case identity -> position of the row kept
    answered_by: dict[str, list[Any]] = {}
    for pos, item in enumerate(inputs):
        if not isinstance(item, dict):
            raise SuiteError(f"{prefix}[{pos}] is not an object", source=source, row=pos + 1)
        identity = lab_identity(item)
        answered_by.setdefault(identity, []).append(item.get("model_key"))
        kept = chosen.get(identity)
        if kept is None or _rank(item, rank) < _rank(inputs[kept], rank):
            chosen[identity] = pos

    rows: list[Row] = []
    for identity, pos in chosen.items():  # dict order: first appearance of each case
        item = dict(inputs[pos])
        model_key = item.get("model_key")
        case_key = item.pop("test_case_key", None) or _strip_model(item.get("key"), model_key)
        item.pop("key", None)
        preset, meta = _h2o_condition(item, "output_condition", "output_constraints")
        if "context" in item:  # in a lab, "context" is what the model retrieved
            preset["retrieved_contexts"] = ("context", item.pop("context"))
        if case_key:
            preset["id"] = ("key", case_key)
        if model_key:
            meta["model"] = names.get(model_key)
            others = [names.get(k, k) for k in answered_by[identity] if k != model_key]
            if others:
                meta["other_models"] = others
        rows.append(
            _json_row(
                item,
                number=pos + 1,
                where=f"{prefix}[{pos}]",
                source=source,
                preset=preset,
                metadata=meta,
            )
        )
    return rows


def _strip_model(key: Any, model_key: Any) -> Any:
    """H2O may key a lab row ``<test_case_key>_<model_key>``; the case is the first part."""
    if isinstance(key, str) and isinstance(model_key, str) and model_key:
        suffix = f"_{model_key}"
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return key


def lab_identity(item: Mapping[str, Any]) -> str:
    key = item.get("test_case_key") or _strip_model(item.get("key"), item.get("model_key"))
    return f"key:{key}" if key else f"input:{item.get('input')}"


def _rank(item: Mapping[str, Any], rank: Mapping[Any, int]) -> int:
    return rank.get(item.get("model_key"), len(rank))
