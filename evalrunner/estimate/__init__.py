"""Cost estimate before a run: ``evalrunner estimate``, and the ``estimate`` beside the
``actual`` figures in every run's summary.json.

``compute.estimate_run`` is imported from its module, not here: ``run.py`` reads the models
of this package, and the computation reads the pipeline, which reads ``run.py``."""

from evalrunner.estimate.model import ActualFigures, AwsCost, JudgeEstimate, RunEstimate
from evalrunner.estimate.prices import PriceTable, load_prices

__all__ = [
    "ActualFigures",
    "AwsCost",
    "JudgeEstimate",
    "PriceTable",
    "RunEstimate",
    "load_prices",
]
