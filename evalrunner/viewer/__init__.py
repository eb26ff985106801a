"""``evalrunner view``: every run under an ``--out`` folder or a bucket prefix, browsable,
comparable and labelled in the browser (a local Starlette app on 127.0.0.1)."""
