"""Checks for the people working on evalrunner itself (not used by a run)."""
