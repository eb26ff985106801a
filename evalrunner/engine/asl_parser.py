"""moto's Step Functions parser, imported without moto's Batch and EC2 models (issue 31).

Every local run needs moto's ASL parser (``AmazonStateLanguageParser``). Importing it reaches
the Batch task's module, whose one import from Batch is ``JobStatus`` (a small ``Enum`` in
``moto/batch/utils.py``); but importing any ``moto.batch`` submodule first runs the package's
``__init__``, which imports the Batch backend and, through it, all of moto's EC2 models. That
was 0.8 s of CPU and 100-130 MiB of peak RSS in every run, for a service the pipeline's
definition never calls (docs/upstream/moto-sfn-parser-imports-batch.md; the fix belongs
upstream).

What this module does meanwhile, and what it relies on: while the parser is imported,
``sys.modules["moto.batch"]`` holds the package's module object built from its own spec but
not executed, so ``moto.batch.utils`` (and the ``moto.batch.exceptions`` it imports) load as
moto ships them, from moto's files, and the package ``__init__`` does not run. Then the
unexecuted package and what loaded under it are forgotten (removed from ``sys.modules``), so
a later ``import moto.batch`` (anything that does use Batch) imports the whole package afresh,
as if this had never happened. The parser's Batch task keeps its ``JobStatus``, a ``str``
``Enum`` it compares with the status strings Batch's responses carry, so a Batch task would
still run. No moto code or object is changed; what this depends on is moto's file layout
(``batch/utils.py`` needing nothing from the package's ``__init__``). If that stops holding,
the import is retried the ordinary way (slower, never wrong), and
``tests/unit/engine/test_asl_parser_import.py`` fails, in a fresh interpreter, when the Batch
or EC2 models are imported again or the whole package no longer loads after it.
It runs once, when this module is imported by the engine's import, before the engine starts
any thread; in that moment (~0.1 s) another thread importing ``moto.batch`` itself would get
the unexecuted package (the pre-flight's probe thread, the one running then, imports no moto).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

_PARSER = "moto.stepfunctions.parser.asl.parse.asl_parser"
_BATCH = "moto.batch"


def import_parser() -> ModuleType:
    """moto's ASL parser module, imported without running ``moto/batch/__init__`` where
    moto's layout allows it, else imported the ordinary way. Call it before anything imports
    the parser (this module does, when imported)."""
    if _PARSER in sys.modules or _BATCH in sys.modules:
        return importlib.import_module(_PARSER)
    spec = importlib.util.find_spec(_BATCH)
    if spec is None:
        return importlib.import_module(_PARSER)
    unexecuted = importlib.util.module_from_spec(spec)
    sys.modules[_BATCH] = unexecuted
    try:
        return importlib.import_module(_PARSER)
    except Exception:
        # moto's layout moved (e.g. the Batch task now needs the package's own names):
        # forget what loaded under the unexecuted package and import as moto ships it.
        _forget_batch()
        return importlib.import_module(_PARSER)
    finally:
        if sys.modules.get(_BATCH) is unexecuted:
            _forget_batch()


def _forget_batch() -> None:
    """Remove the unexecuted package and its submodules from ``sys.modules``, so the next
    import of ``moto.batch`` (the retry, or a caller that uses Batch) loads it whole."""
    for name in [n for n in sys.modules if n == _BATCH or n.startswith(_BATCH + ".")]:
        del sys.modules[name]


import_parser()

# Already imported by import_parser(); the name, typed, for the engine's seams.
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser  # noqa: E402

__all__ = ["AmazonStateLanguageParser", "import_parser"]
