"""``evalrunner generate``: from documents to a validated test suite.

documents (folder or S3 prefix) → structure-aware chunks (:mod:`.documents`, :mod:`.chunks`)
→ topics by embedding clustering (:mod:`.topics`) → cases of several kinds written by the
judge LLM (:mod:`.kinds`, :mod:`.writer`) → validation (:mod:`.validate`) → a suite xlsx in the
runner's template, with a report of what was rejected and what the judge cost."""
