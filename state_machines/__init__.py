"""The state machine definitions, shipped as package data so the local engine and the CDK app
read the very same file."""

from importlib import resources
from pathlib import Path

PLACEHOLDERS = (
    "PrepareFunctionArn",
    "RunCaseFunctionArn",
    "ScoreFunctionArn",
    "AggregateFunctionArn",
    "ChildExecutionType",
    # Score: the GPU Batch job for runs of at least BatchScoringMinItems items, when enabled.
    "BatchScoringEnabled",
    "BatchScoringMinItems",
    # How long ScoreOnBatch waits for the job (queue limit + job timeout, per attempt).
    "BatchScoringTimeoutSeconds",
    "BatchJobQueueArn",
    "BatchJobDefinitionArn",
)


#: The workflow definition's placeholders: its one function (the run state machine it starts
#: is named in that function's environment).
WORKFLOW_PLACEHOLDERS = ("WorkflowFunctionArn",)


def workflow_asl() -> str:
    """The text of ``workflow.asl.json`` (the deployed workflow) with its placeholders."""
    return resources.files(__name__).joinpath("workflow.asl.json").read_text("utf-8")


def test_runner_asl() -> str:
    """The text of ``test_runner.asl.json`` with its ``${...}`` placeholders."""
    return resources.files(__name__).joinpath("test_runner.asl.json").read_text("utf-8")


def test_runner_path() -> Path:
    return Path(str(resources.files(__name__).joinpath("test_runner.asl.json")))


def substitute(
    definition: str, values: dict[str, str], placeholders: tuple[str, ...] = PLACEHOLDERS
) -> str:
    """What CloudFormation's DefinitionSubstitutions does, for the local engine."""
    missing = [p for p in placeholders if p not in values]
    if missing:
        raise KeyError(f"no value for placeholders {missing}")
    for key, value in values.items():
        definition = definition.replace("${" + key + "}", value)
    return definition
