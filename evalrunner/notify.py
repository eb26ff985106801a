"""Run summaries to an SNS topic: the people who own the target hear about a regression
without opening the bucket."""

from __future__ import annotations

import json
from typing import Any

import boto3


def subject(summary: dict[str, Any]) -> str:
    regression = summary.get("regression") or {}
    if regression.get("verdict") == "regression":
        verdict = "REGRESSION"
    elif not summary.get("gates_passed", True):
        verdict = "gates failed"
    else:
        verdict = "passed"
    # SNS subjects: ASCII, at most 100 characters.
    text = f"evalrunner {verdict}: {summary.get('target', '?')} on {summary.get('suite', '?')}"
    return text.encode("ascii", "replace").decode()[:100]


def message(summary: dict[str, Any]) -> str:
    lines = [subject(summary), ""]
    regression = summary.get("regression") or {}
    for reason in regression.get("reasons", []):
        lines.append(f"- {reason}")
    for problem in summary.get("problems", [])[:10]:
        lines.append(f"- [{problem['severity']}] {problem['description']}")
    lines.append("")
    for m in summary.get("metrics", []):
        if m.get("primary") and m.get("average") is not None:
            rate = "n/a" if m.get("pass_rate") is None else f"{m['pass_rate']:.0%}"
            lines.append(f"{m['metric']}: average {m['average']:.3f}, pass rate {rate}")
    lines += ["", f"reports: s3://{summary.get('bucket')}/{summary['reports'].get('html', '')}"]
    lines += ["", json.dumps({"run_id": summary.get("run_id"), "reports": summary["reports"]})]
    return "\n".join(lines)


def publish_summary(topic_arn: str, summary: dict[str, Any], *, client: Any = None) -> str:
    """Publish; returns the message id."""
    sns = client or boto3.client("sns")
    response = sns.publish(TopicArn=topic_arn, Subject=subject(summary), Message=message(summary))
    return str(response["MessageId"])
