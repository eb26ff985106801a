"""``evalrunner workflow``: one command that chains the pieces of a model-risk review —
generate a suite from documents, evaluate it, perturb it, red-team the target, calibrate
against human labels, find the weak spots — each a step that persists its output, so a
stopped workflow resumes, then hands back a workflow report and three artifacts to act on:
a corpus patch, a system-prompt extension and a Bedrock Guardrails configuration."""

from evalrunner.workflow.api import run_workflow
from evalrunner.workflow.config import Step, WorkflowConfig
from evalrunner.workflow.runner import WorkflowResult

__all__ = ["Step", "WorkflowConfig", "WorkflowResult", "run_workflow"]
