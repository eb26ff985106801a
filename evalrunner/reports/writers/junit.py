"""JUnit XML for CI (``--junit-xml FILE``): one ``<testsuite>`` per run, one ``<testcase>`` per
case × iteration × gated metric, one per ``fail_under`` gate, and one for the run's verdict
(:mod:`evalrunner.reports.verdict`), failed unless the run passed.

Gated metrics are each run's primary metrics (those that decide problems and regressions)
plus any metric a ``fail_under`` gate names; secondary metrics stay in details.csv, so a CI
page lists what decides the verdict and not sixty rows per case. A failed case reads
``<failure message=REASON>``, a case the target never answered ``<error>``, a metric skipped
for want of input ``<skipped>``. The shape is the one Jenkins' xUnit plugin validates (its
junit-10.xsd, tested against in ``tests/unit/reports/test_ci_reports.py``), which GitLab,
GitHub test-report actions and Azure DevOps read as well.

Built with :mod:`xml.etree.ElementTree`, which escapes markup; the one thing it does not do is
drop characters XML 1.0 cannot carry at all (control characters), which a target's answer
may hold, so :func:`_xml_text` replaces those.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from evalrunner.reports.model import CaseRow, MetricInfo, ReportData
from evalrunner.reports.summary import RunSummary

#: Characters XML 1.0 forbids (everything below space but tab, LF, CR; lone surrogates;
#: U+FFFE/U+FFFF): a parser rejects the whole file for one of them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: Longest message attribute; the full reason is in the element's text.
_MESSAGE_CHARS = 500


def _xml_text(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def gated_metrics(data: ReportData) -> list[MetricInfo]:
    """The metrics a testcase is written for: primary ones and those a gate names."""
    gated = {g.metric for g in data.gates}
    return [m for m in data.metrics if m.primary or m.metric in gated]


def run_suite(data: ReportData, summary: RunSummary) -> ET.Element:
    """One run as a ``<testsuite>``."""
    suite = ET.Element("testsuite")
    classname = f"evalrunner.{data.target}"
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    metrics = gated_metrics(data)
    for row in data.rows:
        for info in metrics:
            if row.conversation_id is not None and row.result(info.metric) is None:
                # A conversation's own row carries its conversation metrics and each turn its
                # per-turn ones: the others do not apply there (they are not "not evaluated").
                continue
            case = _case_element(row, info, classname, data.iterations)
            suite.append(case)
            counts["tests"] += 1
            for kind, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
                if case.find(kind) is not None:
                    counts[key] += 1
        seconds += (row.latency_ms or 0.0) / 1000
    for gate in data.gates:
        case = ET.SubElement(
            suite, "testcase", name=_xml_text(f"gate {gate.gate}"), classname=classname
        )
        counts["tests"] += 1
        if not gate.passed:
            op = ">=" if gate.higher_is_better else "<="
            average = "no score" if gate.average is None else f"{gate.average:.4f}"
            message = f"{gate.metric} average {average}, gate {op} {gate.threshold}"
            ET.SubElement(
                case, "failure", message=_xml_text(message), type="gate"
            ).text = _xml_text(message)
            counts["failures"] += 1
    # the run's verdict as a testcase of its own: a run that fails for a reason no case
    # shows (a regression, too many errors, a stop) is red in CI's test view as well
    verdict = summary.verdict
    case = ET.SubElement(suite, "testcase", name="run verdict", classname=classname)
    counts["tests"] += 1
    if not verdict.passed:
        message = verdict.line()
        ET.SubElement(
            case, "failure", message=_xml_text(message[:_MESSAGE_CHARS]), type=verdict.outcome
        ).text = _xml_text("\n".join([verdict.headline, *verdict.reasons, *verdict.notes]))
        counts["failures"] += 1
    elif verdict.notes:  # a pass with notes (a regression gate with no baseline): said too
        ET.SubElement(case, "system-out").text = _xml_text(
            "\n".join([verdict.headline, *(f"note: {n}" for n in verdict.notes)])
        )
    suite.attrib.update(
        name=_xml_text(f"{data.target} — {data.suite}"),
        tests=str(counts["tests"]),
        failures=str(counts["failures"]),
        errors=str(counts["errors"]),
        skipped=str(counts["skipped"]),
        time=f"{seconds:.3f}",
        timestamp=_xml_text(data.started_at),
        id=_xml_text(data.run_id),
    )
    properties = ET.Element("properties")
    for name, value in (
        ("run_id", data.run_id),
        ("target", data.target),
        ("suite", data.suite),
        ("report", summary.reports.html),
        ("verdict", summary.verdict.outcome),
        ("exit_code", str(summary.verdict.exit_code)),
        ("gates_passed", str(summary.gates_passed).lower()),
        ("regression", summary.regression.verdict if summary.regression else "none"),
    ):
        ET.SubElement(properties, "property", name=name, value=_xml_text(value))
    suite.insert(0, properties)
    return suite


def _case_element(row: CaseRow, info: MetricInfo, classname: str, iterations: int) -> ET.Element:
    label = row.case_id if iterations == 1 else f"{row.case_id} #{row.iteration}"
    case = ET.Element(
        "testcase",
        name=_xml_text(f"{label} · {info.metric}"),
        classname=_xml_text(classname),
        time=f"{(row.latency_ms or 0.0) / 1000:.3f}",
    )
    if row.status != "ok":
        _detail(case, "error", row.status, row.error or row.status)
        return case
    result = row.result(info.metric)
    if result is None:
        _detail(case, "skipped", "not_evaluated", "not evaluated for this case")
    elif result.status == "skipped":
        _detail(case, "skipped", "skipped", result.reason)
    elif result.status == "error":
        _detail(case, "error", "evaluator_error", result.reason)
    elif not result.success:
        score = "no score" if result.score is None else f"{result.score:.4f}"
        op = ">=" if info.higher_is_better else "<="
        threshold = result.threshold if result.threshold is not None else info.threshold
        _detail(
            case, "failure", "below_threshold", f"{score}, needs {op} {threshold}: {result.reason}"
        )
    return case


def _detail(case: ET.Element, kind: str, type_: str, text: str) -> None:
    clean = _xml_text(text)
    element = ET.SubElement(case, kind, message=clean[:_MESSAGE_CHARS], type=type_)
    element.text = clean


def junit_xml(runs: Sequence[tuple[ReportData, RunSummary]]) -> bytes:
    """The JUnit document for one or more runs (one ``<testsuite>`` each)."""
    root = ET.Element("testsuites", name="evalrunner")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for data, summary in runs:
        suite = run_suite(data, summary)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    root.attrib.update({k: str(v) for k, v in totals.items()})
    ET.indent(root)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


def write_junit(path: Path, runs: Sequence[tuple[ReportData, RunSummary]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(junit_xml(runs))
    return path


__all__ = ["gated_metrics", "junit_xml", "run_suite", "write_junit"]
