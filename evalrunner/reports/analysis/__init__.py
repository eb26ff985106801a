"""What a run's numbers mean, computed from its ReportData alone: no rendering, no I/O."""
