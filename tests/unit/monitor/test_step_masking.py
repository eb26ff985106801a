"""Agent steps read from traces are masked like the interaction's texts before a monitor
writes them into its suite (evalrunner/monitor/runner.py ``suite_rows``): tool arguments
are arbitrary JSON, so personal data sits in any of its values, under any key (a CRM tool's
``{"name": ...}``), as a key, or as a JSON number (a phone or card number logged as an int)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from evalrunner.monitor.model import Interaction
from evalrunner.monitor.runner import suite_rows
from evalrunner.targets.steps import AgentStep


def logged(step: AgentStep) -> Interaction:
    return Interaction(
        id="r1",
        id_kind="record",
        question="add my friend to the CRM, she wrote from jane@ex.com",
        answer="done",
        steps=[step],
        timestamp=datetime(2026, 1, 31, 12, tzinfo=UTC),
        origin="log:1",
        source="jsonl",
    )


def test_every_value_key_and_number_of_a_tools_arguments_is_masked() -> None:
    step = AgentStep(
        name="crm/create_contact",
        arguments={
            "name": "jane@ex.com",  # an argument called "name" is the tool's input, not its name
            "contact": {"name": "jo@ex.com", "kind": "+1 212 555 0100"},
            "phone": 2125550100,
            "card": 4111111111111111,
            "by_mail": {"ann@ex.com": True},
            "count": 3,
        },
        output="created for jane@ex.com",
    )
    (row,) = suite_rows([logged(step)], mask_pii=True)
    flat = json.dumps(row)
    for value in ("jane@ex.com", "jo@ex.com", "ann@ex.com", "555 0100", "2125550100", "41111111"):
        assert value not in flat, value
    (masked,) = row["actual_steps"]
    assert masked["name"] == "crm/create_contact" and masked["kind"] == "tool"
    arguments = masked["arguments"]
    # one placeholder table with the question: the argument is the address the user gave
    assert row["question"].endswith("<EMAIL_1>") and arguments["name"] == "<EMAIL_1>"
    assert arguments["contact"] == {"name": "<EMAIL_2>", "kind": "<PHONE_1>"}
    assert arguments["phone"] == "<PHONE_1>" and arguments["card"] == "<CARD_1>"
    assert arguments["by_mail"] == {"<EMAIL_3>": True} and arguments["count"] == 3
    assert masked["output"] == "created for <EMAIL_1>"
    # the masked step is still a step the logged target reads back
    AgentStep.model_validate(masked)


def test_without_masking_the_steps_are_written_as_logged() -> None:
    step = AgentStep(name="crm/create_contact", arguments={"name": "Jane", "phone": 2125550100})
    (row,) = suite_rows([logged(step)], mask_pii=False)
    assert row["actual_steps"][0]["arguments"] == {"name": "Jane", "phone": 2125550100}


def test_a_text_longer_than_the_run_examines_is_cut_before_masking() -> None:
    """The run's evaluators examine the first DEFAULT_MAX_TEXT_CHARS of each text; masking a
    pasted megabyte past that costs the monitor function ~100 ms per KB of hostile text
    (bench/RESULTS.md, "PII masking: the audit") and stores production text no metric
    reads. The suite keeps what the run examines, masked, and says what was cut."""
    from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS

    head = "my mail is jane@ex.com. "
    question = head + "x" * DEFAULT_MAX_TEXT_CHARS + " and call +1 212 555 0100"
    step = AgentStep(name="search", output="y" * (DEFAULT_MAX_TEXT_CHARS + 5))
    item = logged(step).model_copy(update={"question": question, "contexts": ["jo@ex.com"]})
    (row,) = suite_rows([item], mask_pii=True)
    assert row["question"].startswith("my mail is <EMAIL_1>. xxx")
    assert len(row["question"]) <= DEFAULT_MAX_TEXT_CHARS
    assert "555 0100" not in json.dumps(row) and row["retrieved_contexts"] == ["<EMAIL_2>"]
    assert len(row["actual_steps"][0]["output"]) == DEFAULT_MAX_TEXT_CHARS
    assert row["cut"] == (
        f"question: {len(question):,} characters, the first {DEFAULT_MAX_TEXT_CHARS:,} kept; "
        f"actual_steps: {DEFAULT_MAX_TEXT_CHARS + 5:,} characters, the first "
        f"{DEFAULT_MAX_TEXT_CHARS:,} kept"
    )
    (plain,) = suite_rows([item], mask_pii=False)
    assert plain["question"] == question and "cut" not in plain


def test_a_log_key_holding_personal_data_is_masked_where_it_is_shown(tmp_path) -> None:
    """Logs partitioned by user (``logs/user=jo@ex.com/part-0.jsonl``) put an e-mail in the
    file name: the suite's ``logged_in`` cell and a problem line's file name reach the
    reports, the terminal and the function's log like the texts do."""
    from evalrunner.monitor.model import RecordProblem

    item = logged(AgentStep(name="search")).model_copy(
        update={"origin": "s3://logs/user=jo@ex.com/part-0.jsonl:3"}
    )
    (row,) = suite_rows([item], mask_pii=True)
    assert row["question"].endswith("<EMAIL_1>")  # jane@ex.com: one table for the case
    assert row["logged_in"] == "s3://logs/user=<EMAIL_2>/part-0.jsonl:3"
    problem = RecordProblem(file="logs/user=jo@ex.com/part-0.jsonl", line=2, message="bad")
    assert "jo@ex.com" not in problem.text() and "<EMAIL_1>" in problem.text()
