"""The four steps of a run. Each is a plain function over a :class:`RunStore`; the Lambda
handlers in ``lambdas/`` are a few lines around them."""
