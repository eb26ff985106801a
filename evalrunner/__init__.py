"""evalrunner: regression testing for RAG and LLM agents.

The core library knows nothing of Lambda: the handlers in ``lambdas/`` parse their event, call
into this package and return. The same code runs in the cloud and in the embedded local engine.
"""

__version__ = "0.1.0"
