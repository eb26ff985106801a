"""nltk imported as the deployed Score function has it: without scipy and scikit-learn (issue 31).

rouge-score stems with nltk's Porter stemmer and BLEU uses nltk's ``bleu_score``, and
importing any nltk module first runs ``nltk/__init__``, which imports nearly all of nltk.
Where scipy and scikit-learn are installed (on a laptop, the ``local`` extra's
scikit-learn, for ``calibrate``), that top level also imports them for features evalrunner
never calls (``nltk.metrics.association``'s Fisher test, ``nltk.classify.scikitlearn``, the
transition parser, Gale-Church): 1.2 s of CPU and ~120 MiB of a 5-case ROUGE run, against
0.25 s without them (docs/upstream/nltk-eager-init.md). nltk lists both as optional and
imports each inside ``try: ... except ImportError``; the Lambda layer does not install them,
so deployed runs already import nltk this way.

:func:`import_nltk` imports nltk once, with a meta-path finder (``importlib``'s documented
hook) answering "not installed" for scipy and scikit-learn modules not yet imported, to the
importing thread only and only while nltk's top level runs; another thread importing scipy
meanwhile is not affected. What that costs: in this process, the nltk features above behave
as on a machine without scipy and scikit-learn (nltk's own fallbacks, e.g. ``fisher_exact``
refusing to run for want of scipy); scipy and scikit-learn themselves import normally. Where
nltk was already imported (by the caller's own code), nothing changes. The stemmer and BLEU
do not touch either library, and the ROUGE and BLEU equivalence tests pin their scores to
rouge-score's and nltk's.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

#: nltk's optional dependencies that its top level imports for features evalrunner never uses.
NOT_OFFERED = ("scipy", "sklearn")

_lock = threading.Lock()
_imported = False


class _NotOffered(importlib.abc.MetaPathFinder):
    """Answers "not installed" for :data:`NOT_OFFERED` to one thread; defers everything else."""

    def __init__(self, thread: int) -> None:
        self._thread = thread

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if threading.get_ident() == self._thread and fullname.split(".")[0] in NOT_OFFERED:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def import_nltk() -> None:
    """Import nltk's top level once, without scipy and scikit-learn (see the module's
    docstring); call before any ``from nltk... import``."""
    global _imported
    if _imported:
        return
    with _lock:  # a second caller waits here until nltk is whole
        if "nltk" not in sys.modules:
            finder = _NotOffered(threading.get_ident())
            sys.meta_path.insert(0, finder)
            try:
                importlib.import_module("nltk")
            finally:
                sys.meta_path.remove(finder)
        _imported = True
