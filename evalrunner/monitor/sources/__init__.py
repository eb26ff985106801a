"""Sources of real interactions, each a small class registered by name
(:func:`.base.register_source`); importing this package registers the built-in ones."""

from evalrunner.monitor.sources import agent_traces, bedrock_logs, otel, tabular
from evalrunner.monitor.sources.base import Source, source_kinds, source_named

__all__ = [
    "Source",
    "agent_traces",
    "bedrock_logs",
    "otel",
    "source_kinds",
    "source_named",
    "tabular",
]
