"""The LLM judge: clients (OpenAI-compatible, Bedrock Converse), a response cache, retries,
call and token accounting, and the shared extraction steps judge metrics build on."""

from evalrunner.judge.base import (
    Judge,
    JudgeError,
    JudgeParseError,
    JudgeReply,
    JudgeUsage,
    Message,
)

__all__ = ["Judge", "JudgeError", "JudgeParseError", "JudgeReply", "JudgeUsage", "Message"]
