"""``evalrunner workflow``: one command that chains the pieces of a model-risk review —
generate a suite from documents, evaluate it, perturb it, red-team the target, calibrate
against human labels, find the weak spots — each a step that persists its output, so a
stopped workflow resumes, then hands back a workflow report and three artifacts to act on:
a corpus patch, a system-prompt extension and a Bedrock Guardrails configuration.

The same workflow runs deployed, started by one event (:mod:`evalrunner.workflow.event`):
the workflow state machine's function runs these very steps over the bucket
(:mod:`evalrunner.workflow.deployed`), and ``evalrunner workflow --event FILE [--aws]``
runs that event here or there (:mod:`evalrunner.workflow.remote`)."""

from evalrunner.workflow.api import run_workflow
from evalrunner.workflow.config import Step, WorkflowConfig
from evalrunner.workflow.runner import WorkflowResult

__all__ = ["Step", "WorkflowConfig", "WorkflowResult", "run_workflow"]
