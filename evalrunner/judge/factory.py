"""From a :class:`JudgeConfig` to the run's judge client (one instance per run and process)."""

from __future__ import annotations

import boto3

from evalrunner.judge.base import Judge
from evalrunner.judge.cache import BucketStore, CacheStore, FolderStore, ResponseCache
from evalrunner.judge.config import JudgeConfig
from evalrunner.storage import RunStore


def build_cache(config: JudgeConfig, store: RunStore | None = None) -> ResponseCache | None:
    """None when ``cache`` is off; else memory in front of ``cache_dir``, else the run
    bucket's ``judge-cache/``, else memory only (no store given)."""
    if not config.cache:
        return None
    persistent: CacheStore | None = None
    if config.cache_dir:
        persistent = FolderStore(config.cache_dir)
    elif store is not None:
        persistent = BucketStore(store)
    return ResponseCache(persistent)


def build_judge(
    config: JudgeConfig,
    *,
    store: RunStore | None = None,
    session: boto3.Session | None = None,
) -> Judge:
    """The judge ``config`` describes. ``store`` hosts the cache when no ``cache_dir`` is set;
    ``session`` is used for Bedrock (the local engine passes one that escapes moto)."""
    cache = build_cache(config, store)
    if config.openai is not None:
        from evalrunner.judge.openai_judge import OpenAIJudge

        return OpenAIJudge(config, cache=cache)
    from evalrunner.judge.bedrock_judge import BedrockJudge

    return BedrockJudge(config, cache=cache, session=session)
