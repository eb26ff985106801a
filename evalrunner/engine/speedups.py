"""Two caches for moto's Step Functions interpreter, which (as of moto 5.2.5) re-parses every
JSONPath with a fresh yacc parser and builds a new boto3 client for every Lambda task. Both
are pure costs of the embedded engine, not behaviour: the cached parse yields the same
expression object, and boto3 clients are safe to share between threads.

Measured on the 2-core CI machine: roughly halves the engine's per-case overhead
(bench/RESULTS.md).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.utils import json_path

_lock = threading.Lock()


@contextmanager
def interpreter_speedups() -> Iterator[None]:
    with _lock:
        original_parse = json_path.parse
        original_client = lambda_eval_utils.boto_client_for
        cached_parse = functools.lru_cache(maxsize=4096)(original_parse)
        clients: dict[tuple[str, str], Any] = {}
        clients_lock = threading.Lock()

        def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
            key = (region, service)
            with clients_lock:
                if key not in clients:
                    clients[key] = original_client(
                        region=region, service=service, state_credentials=state_credentials
                    )
                return clients[key]

        json_path.parse = cached_parse
        lambda_eval_utils.boto_client_for = client_for
        try:
            yield
        finally:
            json_path.parse = original_parse
            lambda_eval_utils.boto_client_for = original_client
