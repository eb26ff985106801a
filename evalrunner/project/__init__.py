"""The project file (``evalrunner.toml`` / ``evalrunner.yaml``): named targets and suites,
metrics, judge and gates in one file, run as a matrix of targets × suites by ``evalrunner
run`` with no arguments. :mod:`.model` (what the file may hold, composed from the event's
models), :mod:`.source` (finding and reading it, the line of every key), :mod:`.cells` (the
event of each cell, validated as an event), :mod:`.matrix` (the combined summary),
:mod:`.schema` (its JSON Schema)."""
