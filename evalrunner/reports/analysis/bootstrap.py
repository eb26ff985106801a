"""The bootstrap interval of a change in average score between two runs, shared by the
regression comparison (per metric) and the robustness comparison (per perturbation): one
statistic, in a module of its own so that neither comparison imports the other for it
(see :mod:`evalrunner.reports.analysis.regression` for the method and why cases are resampled
whole).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: Resample in blocks of at most this many drawn indices, to bound memory on large suites.
_BLOCK_CELLS = 2_000_000


def delta_interval(
    current: Mapping[str, Sequence[float]],
    baseline: Mapping[str, Sequence[float]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> tuple[float | None, float | None]:
    """Bootstrap interval of (current average − baseline average) over cases.

    ``current`` and ``baseline`` map case_id -> the scores of its iterations. Cases present in
    both are resampled as pairs, the others within their own run. None, None with fewer than
    two cases on either side.
    """
    cur = {k: v for k, v in current.items() if len(v)}
    base = {k: v for k, v in baseline.items() if len(v)}
    if len(cur) < 2 or len(base) < 2:
        return None, None
    rng = rng if rng is not None else np.random.default_rng(0)
    matched = [k for k in cur if k in base]
    cur_only = [k for k in cur if k not in base]
    base_only = [k for k in base if k not in cur]

    def sums(groups: Mapping[str, Sequence[float]], ids: list[str]) -> np.ndarray:
        return np.array([[float(sum(groups[k])), len(groups[k])] for k in ids]).reshape(-1, 2)

    # Strata as (n, 4) arrays of current sum, current count, baseline sum, baseline count per
    # case: matched cases carry both runs, so one draw moves both (the pairing).
    zeros = np.zeros
    strata = [
        np.hstack([sums(cur, matched), sums(base, matched)]),
        np.hstack([sums(cur, cur_only), zeros((len(cur_only), 2))]),
        np.hstack([zeros((len(base_only), 2)), sums(base, base_only)]),
    ]
    strata = [s for s in strata if len(s)]
    block = max(1, _BLOCK_CELLS // max(len(s) for s in strata))
    diffs = np.empty(resamples)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        totals = np.zeros((size, 4))
        for stratum in strata:
            n = len(stratum)
            # How often each case is drawn in each resample, then a weighted sum (one matmul).
            idx = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
            counts = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n)
            totals += counts @ stratum
        diffs[start : start + size] = totals[:, 0] / totals[:, 1] - totals[:, 2] / totals[:, 3]
    alpha = 1.0 - confidence
    low, high = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


__all__ = ["delta_interval"]
