"""Helpers shared by the test suites (importable as ``tests.support``)."""
