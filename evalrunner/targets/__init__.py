"""Targets: the systems under test, each in its own module, all answering with one shape."""
