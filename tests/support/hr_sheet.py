"""The HR-assistant evaluation sheet as users bring it: what the system logged beside the
ground truth, three rows of the plan's example, NA cells as the sheet writes them."""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook

HEADER = [
    "user_input",
    "classified_intent_by_system",
    "classified_intent_ground_truth",
    "selected_tool_by_system",
    "selected_tool_ground_truth",
    "retrieved_document_by_system",
    "retrieved_document_ground_truth",
    "retrieved_chunk_by_system",
    "retrieved_chunk_ground_truth",
    "retrieved_data_by_system",
    "retrieved_data_ground_truth",
    "answer_from_system",
    "answer_ground_truth",
]
LEAVE_CHUNK = "Full-time employees get 25 days of paid annual leave per year."
ROWS = [
    [
        "How many days of annual leave do I get?",
        "leave_policy",
        "leave_policy",
        "search_policies",
        "search_policies",
        "leave-policy.pdf\nbenefits.pdf",
        "leave-policy.pdf",
        LEAVE_CHUNK,
        LEAVE_CHUNK,
        "NA",
        "NA",
        "You get 25 days of paid annual leave per year.",
        LEAVE_CHUNK,
    ],
    [
        "How many leave days do I have left?",
        "leave_balance",
        "leave_balance",
        "get_leave_balance",
        "get_leave_balance",
        "N/A",
        "n/a",
        "-",
        "-",
        '{"remaining_days": 12}',
        '{"remaining_days":12}',
        "You have 12 days of leave left.",
        "You have 12 days of annual leave remaining.",
    ],
    [
        "Hello!",
        "greeting",
        "greeting",
        "NA",
        "NA",
        "-",
        "",
        None,
        "N/A",
        "n/a",
        "-",
        "Hello! How can I help you today?",
        "Hello, how can I help you today?",
    ],
]


def write_hr_sheet(path: Path, rows: list[list[object]] | None = None) -> Path:
    """Write the sheet as an xlsx (header row, then ``rows``, the plan's three by default)."""
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "HR evaluation"
    sheet.append(HEADER)
    for row in ROWS if rows is None else rows:
        sheet.append(row)
    workbook.save(path)
    return path
