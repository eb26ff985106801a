"""A Bedrock knowledge base, via RetrieveAndGenerate, as the system under test.

Useful to evaluate retrieval and generation before an agent exists around them: the same
suite can later run against the agent and the two reports compare like for like.

The knowledge base's advanced settings pass through as the API names them, so what was
tuned in the console or in code is what is tested: the number of results, the search type
and the metadata filter of the vector search, and the generation configuration (prompt
template, inference settings, guardrail id and version, additional model request fields)
and orchestration configuration. botocore's own model of RetrieveAndGenerate validates them
when the event is read, so a misspelt key or a wrong type is refused before the run with
the parameter it concerns, not discovered case by case.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Self

import boto3
import botocore.session
from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters
from pydantic import Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from evalrunner.errors import TargetError
from evalrunner.suite.model import TestCase
from evalrunner.targets._aws import aws_errors, make_client
from evalrunner.targets.base import DEPLOY_HINT, IamGrant, Target, TargetResponse
from evalrunner.targets.registry import register
from evalrunner.targets.reply_contexts import bedrock_references
from evalrunner.targets.spec import SpecModel, TargetSpec, integral


class KnowledgeBaseFields(SpecModel):
    """``{"knowledgeBaseId", "modelArn"}``: RetrieveAndGenerate on a knowledge base, with the
    knowledge base's advanced settings passed through as the API names them."""

    schema_def: ClassVar[str] = "knowledgeBase"

    knowledgeBaseId: str = Field(pattern=r"^[0-9a-zA-Z]{10}$")
    modelArn: str = Field(min_length=1)
    numberOfResults: Annotated[int, Field(ge=1, le=100), integral] | None = None
    searchType: (
        Annotated[Literal["HYBRID", "SEMANTIC"], WithJsonSchema({"enum": ["HYBRID", "SEMANTIC"]})]
        | None
    ) = Field(
        default=None,
        description="The vector search's overrideSearchType: HYBRID (vector and keyword) or "
        "SEMANTIC (vector only). Default: the knowledge base's own choice.",
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Metadata filter of the vector search (RetrievalFilter, e.g. "
        '{"equals": {"key": "region", "value": "EU"}} or {"andAll": [...]}), sent as it is.',
    )
    generationConfiguration: dict[str, Any] | None = Field(
        default=None,
        description="RetrieveAndGenerate's generationConfiguration, sent as it is: "
        "promptTemplate {textPromptTemplate with $search_results$}, inferenceConfig "
        "{textInferenceConfig: temperature, topP, maxTokens, stopSequences}, "
        "guardrailConfiguration {guardrailId, guardrailVersion}, "
        "additionalModelRequestFields, performanceConfig.",
    )
    orchestrationConfiguration: dict[str, Any] | None = Field(
        default=None,
        description="RetrieveAndGenerate's orchestrationConfiguration (query decomposition, "
        "its prompt template and inference settings), sent as it is.",
    )

    @model_validator(mode="after")
    def _as_bedrock_accepts_it(self) -> Self:
        """The configuration as botocore's model of RetrieveAndGenerate accepts it, so a
        misspelt or mistyped setting is refused before the run, naming the parameter."""
        problem = configuration_problem(knowledge_base_configuration(self))
        if problem:
            raise PydanticCustomError("bedrock_configuration", "{why}", {"why": problem})
        return self


class KnowledgeBaseSpec(KnowledgeBaseFields, TargetSpec):
    """A knowledge base target as the event gives it."""


def _guardrail_id(spec: dict[str, Any]) -> str | None:
    """The guardrail a spec's generation applies (its id, also when given as an ARN)."""
    generation = spec.get("generationConfiguration")
    guardrail = generation.get("guardrailConfiguration") if isinstance(generation, dict) else None
    value = guardrail.get("guardrailId") if isinstance(guardrail, dict) else None
    return value.rsplit("/", 1)[-1] if isinstance(value, str) and value else None


def knowledge_base_configuration(fields: KnowledgeBaseFields) -> dict[str, Any]:
    """RetrieveAndGenerate's ``knowledgeBaseConfiguration`` for these fields: the retrieval
    settings under ``retrievalConfiguration.vectorSearchConfiguration``, the generation and
    orchestration objects as given."""
    kb: dict[str, Any] = {"knowledgeBaseId": fields.knowledgeBaseId, "modelArn": fields.modelArn}
    vector: dict[str, Any] = {}
    if fields.numberOfResults:
        vector["numberOfResults"] = fields.numberOfResults
    if fields.searchType:
        vector["overrideSearchType"] = fields.searchType
    if fields.filter is not None:
        vector["filter"] = copy.deepcopy(fields.filter)
    if vector:
        kb["retrievalConfiguration"] = {"vectorSearchConfiguration": vector}
    if fields.generationConfiguration is not None:
        kb["generationConfiguration"] = copy.deepcopy(fields.generationConfiguration)
    if fields.orchestrationConfiguration is not None:
        kb["orchestrationConfiguration"] = copy.deepcopy(fields.orchestrationConfiguration)
    return kb


@cache
def _configuration_shape() -> Any:
    """botocore's shape of ``knowledgeBaseConfiguration`` (from the installed service model)."""
    model = botocore.session.get_session().get_service_model("bedrock-agent-runtime")
    request = model.operation_model("RetrieveAndGenerate").input_shape
    return request.members["retrieveAndGenerateConfiguration"].members["knowledgeBaseConfiguration"]


def configuration_problem(kb: dict[str, Any]) -> str | None:
    """What botocore's parameter validation says against ``kb`` (None: it accepts it)."""
    try:
        validate_parameters(kb, _configuration_shape())
    except ParamValidationError as exc:
        report = str(exc).removeprefix("Parameter validation failed:").strip()
        return f"RetrieveAndGenerate's knowledgeBaseConfiguration is refused by botocore: {report}"
    return None


@register
class KnowledgeBaseTarget(Target):
    """RetrieveAndGenerate with type KNOWLEDGE_BASE; citations become contexts/documents."""

    kind = "knowledgeBaseId"
    spec_model = KnowledgeBaseSpec
    options: KnowledgeBaseSpec
    companions = ("modelArn",)
    calls_aws = True
    deploy_list = "knowledge_bases"
    iam = (
        IamGrant(
            "QueryTargetKnowledgeBases",
            ("bedrock:Retrieve",),
            "arn:{partition}:bedrock:{region}:{account}:knowledge-base/{knowledge_base_id}",
        ),
        # RetrieveAndGenerate has no resource type: IAM authorises the call on '*' and then
        # checks bedrock:Retrieve on the knowledge base and InvokeModel on the model, both
        # scoped (the models by cdk.json's model_arns).
        IamGrant(
            "RetrieveAndGenerate",
            ("bedrock:RetrieveAndGenerate",),
            "*",
            wildcard_reason="bedrock:RetrieveAndGenerate has no resource type (IAM then "
            "checks bedrock:Retrieve on the configured knowledge bases and InvokeModel on the "
            "configured models, both scoped); X-Ray has no resource-level permissions.",
        ),
    )

    def __init__(self, spec: dict[str, Any], *, session: boto3.Session | None = None) -> None:
        super().__init__(spec)
        self.knowledge_base_id = self.options.knowledgeBaseId
        self.model_arn = self.options.modelArn
        self.number_of_results = self.options.numberOfResults
        self.timeout = self.options.timeout_seconds
        # The knowledge base id carries no region; an explicit one wins over the model ARN's.
        arn = None if spec.get("region") else self.model_arn
        self.client = make_client("bedrock-agent-runtime", self.options, session=session, arn=arn)
        self.region = self.client.meta.region_name

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        return str(spec["knowledgeBaseId"])

    @classmethod
    def deploy_problems(cls, spec: dict[str, Any], allowed: Any) -> list[str]:
        out = []
        if spec["knowledgeBaseId"] not in {k.knowledge_base_id for k in allowed.knowledge_bases}:
            out.append(
                f"target.knowledgeBaseId {spec['knowledgeBaseId']} is not in "
                f"targets.knowledge_bases; {DEPLOY_HINT}"
            )
        if spec.get("modelArn") not in allowed.model_arns:
            out.append(f"target.modelArn {spec.get('modelArn')} is not in targets.model_arns")
        guardrail = _guardrail_id(spec)
        listed = {arn.rsplit("/", 1)[-1] for arn in getattr(allowed, "guardrail_arns", ())}
        if guardrail is not None and guardrail not in listed:
            out.append(
                "target.generationConfiguration.guardrailConfiguration.guardrailId "
                f"{guardrail} is not in targets.guardrail_arns; {DEPLOY_HINT}"
            )
        return out

    def _configuration(self) -> dict[str, Any]:
        kb = knowledge_base_configuration(self.options)
        return {"type": "KNOWLEDGE_BASE", "knowledgeBaseConfiguration": kb}

    def invoke(self, case: TestCase) -> TargetResponse:
        """Replay prior user turns in one RetrieveAndGenerate session, then ask the question."""
        session_id: str | None = None
        for turn in case.conversation:
            if turn.role == "user":
                session_id = self._ask(turn.content, session_id).get("sessionId") or session_id
        response = self._ask(case.question, session_id)
        text = (response.get("output") or {}).get("text")
        if not isinstance(text, str):
            raise TargetError(f"Knowledge base {self.knowledge_base_id} returned no output text.")
        contexts: list[str] = []
        documents: list[str] = []
        for citation in response.get("citations") or ():
            found_contexts, found_documents = bedrock_references(
                citation.get("retrievedReferences") or ()
            )
            contexts.extend(found_contexts)
            documents.extend(found_documents)
        return TargetResponse(
            answer=text,
            contexts=list(dict.fromkeys(contexts)),
            documents=list(dict.fromkeys(documents)),
        )

    def _ask(self, text: str, session_id: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "input": {"text": text},
            "retrieveAndGenerateConfiguration": self._configuration(),
        }
        if session_id:
            params["sessionId"] = session_id
        permission = (
            f"bedrock:RetrieveAndGenerate and bedrock:Retrieve on knowledge base "
            f"{self.knowledge_base_id}, and bedrock:InvokeModel on {self.model_arn}"
        )
        with aws_errors(
            f"RetrieveAndGenerate on knowledge base {self.knowledge_base_id}",
            timeout=self.timeout,
            region=self.region,
            permission=permission,
        ):
            reply: dict[str, Any] = self.client.retrieve_and_generate(**params)
            return reply
