"""``python -m evalrunner.cli``."""

from evalrunner.cli import main

main()
