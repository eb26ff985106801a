"""Test suites: the case model and the readers for xlsx, csv and json."""

from evalrunner.suite.model import Suite, TestCase, Turn
from evalrunner.suite.readers import read_suite, read_suite_file
from evalrunner.suite.template import write_suite_xlsx, write_template

__all__ = [
    "Suite",
    "TestCase",
    "Turn",
    "read_suite",
    "read_suite_file",
    "write_suite_xlsx",
    "write_template",
]
