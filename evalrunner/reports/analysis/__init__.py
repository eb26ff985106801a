"""What a run's numbers mean: the statistics ReportData is built from, and what is computed
from it. No rendering and no file I/O here: views and writers read the results."""
