"""A Bedrock knowledge base, via RetrieveAndGenerate, as the system under test.

Useful to evaluate retrieval and generation before an agent exists around them: the same
suite can later run against the agent and the two reports compare like for like.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import boto3
from pydantic import Field

from evalrunner.errors import TargetError
from evalrunner.suite.model import TestCase
from evalrunner.targets._aws import aws_errors, make_client
from evalrunner.targets.base import DEPLOY_HINT, IamGrant, Target, TargetResponse
from evalrunner.targets.registry import register
from evalrunner.targets.reply_contexts import bedrock_references
from evalrunner.targets.spec import SpecModel, TargetSpec, integral


class KnowledgeBaseFields(SpecModel):
    """``{"knowledgeBaseId", "modelArn"}``: RetrieveAndGenerate on a knowledge base."""

    schema_def: ClassVar[str] = "knowledgeBase"

    knowledgeBaseId: str = Field(pattern=r"^[0-9a-zA-Z]{10}$")
    modelArn: str = Field(min_length=1)
    numberOfResults: Annotated[int, Field(ge=1, le=100), integral] | None = None


class KnowledgeBaseSpec(KnowledgeBaseFields, TargetSpec):
    """A knowledge base target as the event gives it."""


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
        return out

    def _configuration(self) -> dict[str, Any]:
        kb: dict[str, Any] = {"knowledgeBaseId": self.knowledge_base_id, "modelArn": self.model_arn}
        if self.number_of_results:
            kb["retrievalConfiguration"] = {
                "vectorSearchConfiguration": {"numberOfResults": self.number_of_results}
            }
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
