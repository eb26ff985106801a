"""The parts of the evalrunner stack, one module each: the bucket, the Lambda functions, the
state machine, GPU scoring on Batch, the triggers (upload, schedules) and observability
(SNS topic, alarms, dashboard). ``infra/stack.py`` composes them.

They are plain builders, not ``Construct`` subclasses: each creates its resources directly in
the stack's scope, so construct paths, and with them CloudFormation logical IDs, are those of
a single flat stack (a new scope would rename every resource, i.e. replace it on deploy).
"""
