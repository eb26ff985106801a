"""Production monitoring: real interactions read from logs and traces, scored with
referenceless metrics through the ordinary pipeline (the ``logged`` target), once each.

- :mod:`.model`: an :class:`~.model.Interaction` (a case with no expected answer) and the
  problems a malformed record produces (file, line, field).
- :mod:`.sources`: readers by name (``jsonl``, ``csv``, ``otel``, ``bedrock-invocations``,
  ``bedrock-agent-traces``), :mod:`.locations`: a local folder or an S3 prefix.
- :mod:`.watermark`: what was scored (event-time watermark, allowed lateness, ids inside it),
  kept beside the reports (local) or in the run bucket (deployed).
- :mod:`.sampling`: a seeded sample (N or a share) that does not depend on record order.
- :mod:`.runner`: the monitor run itself; :mod:`.promote`: the worst interactions of a run as
  regression cases.
"""
