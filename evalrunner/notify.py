"""Run summaries to an SNS topic: the people who own the target hear about a regression
without opening the bucket."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import boto3

from evalrunner.reports.summary import RunSummary
from evalrunner.signals.worst import WorstInteraction, worst_lines


def subject(summary: RunSummary) -> str:
    verdict = summary.verdict.headline  # the run's one verdict (reports/verdict.py)
    if summary.regressed and not summary.verdict.regressed_fails():
        verdict += ", regressed"  # the owners hear of it even where it does not fail the run
    # SNS subjects: ASCII, at most 100 characters.
    text = f"evalrunner {verdict}: {summary.target} on {summary.suite}"
    return text.encode("ascii", "replace").decode()[:100]


def message(
    summary: RunSummary, worst: Sequence[WorstInteraction] = (), text_chars: int = 300
) -> str:
    """The message: verdict, problems, primary metrics, and for a monitor run the worst
    interactions (masked and cut: :mod:`evalrunner.signals.worst`)."""
    lines = [subject(summary), ""]
    lines += [f"- {reason}" for reason in summary.verdict.reasons]
    lines += [f"- note: {note}" for note in summary.verdict.notes]
    for problem in summary.problems[:10]:
        lines.append(f"- [{problem.severity}] {problem.description}")
    lines.append("")
    for m in summary.metrics:
        if m.primary and m.average is not None:
            rate = "n/a" if m.pass_rate is None else f"{m.pass_rate:.0%}"
            lines.append(f"{m.metric}: average {m.average:.3f}, pass rate {rate}")
    if worst:
        lines += ["", *worst_lines(list(worst), text_chars)]
    reports = summary.reports
    lines += ["", f"reports: s3://{summary.bucket}/{reports.html}"]
    lines += ["", json.dumps({"run_id": summary.run_id, "reports": reports.model_dump()})]
    return "\n".join(lines)


def publish_summary(
    topic_arn: str,
    summary: RunSummary,
    *,
    client: Any = None,
    worst: Sequence[WorstInteraction] = (),
    text_chars: int = 300,
) -> str:
    """Publish; returns the message id."""
    sns = client or boto3.client("sns")
    body = message(summary, worst, text_chars)
    response = sns.publish(TopicArn=topic_arn, Subject=subject(summary), Message=body)
    return str(response["MessageId"])
