"""What the HTML pages show, decided in Python and handed to ``reports/templates/``."""
