"""Reports of a run: the typed models every report is rendered from, and three rooms.

- ``model.py`` (ReportData, what every rendering reads), ``summary.py`` (RunSummary, the
  execution's output and summary.json) and ``verdict.py`` (the run's one verdict) stay here:
  the pipeline, the engines, the CLI and the Python API read them, and so does every room.
- ``analysis/``: what a run's numbers mean: the statistics ReportData is built from
  (``stats.py``) and what is computed from it (categories, problems, insights, regression
  against a baseline, robustness, weak spots, the leaderboard); no rendering, no file I/O.
- ``views/``: what the HTML pages show (one ``*_view.py`` per section, chart geometry,
  colours, number formatting) and their rendering through ``templates/`` and ``static/``.
- ``writers/``: the files a run leaves behind (CSV, xlsx, JUnit XML, Markdown, the history
  page) and how a report set is published atomically.
"""
