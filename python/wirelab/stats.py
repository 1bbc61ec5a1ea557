"""The statistics every wirelab table uses: means with Student-t confidence intervals,
Jain's fairness index, percentiles and empirical CDFs, a least-squares drift.

One implementation for the sweep reports and every reproduction, so that a number means
the same thing wherever it is printed. The t quantile comes from :mod:`scipy.stats`.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
from scipy import stats as _st

__all__ = ["clean", "t_quantile", "mean_ci", "mean_sd", "jain", "percentile", "ecdf", "drift"]


def clean(values: Iterable[float | None]) -> np.ndarray:
    """The values as floats without None and NaN."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    return v[~np.isnan(v)]


def t_quantile(dof: int, confidence: float = 0.95) -> float:
    """Two-sided Student-t quantile for ``dof`` degrees of freedom (NaN below 1).

    >>> round(t_quantile(4), 4), round(t_quantile(29), 4)
    (2.7764, 2.0452)
    """
    if dof < 1:
        return math.nan
    return float(_st.t.ppf(0.5 + confidence / 2, dof))


def mean_ci(values: Iterable[float | None], confidence: float = 0.95) -> tuple[float, float, int]:
    """Mean, half-width of its two-sided Student-t confidence interval, and count, over the
    values that are not None/NaN (half-width NaN for fewer than two).

    >>> m, h, n = mean_ci([1.0, 2.0, 3.0, None, float("nan")])
    >>> m, round(h, 4), n
    (2.0, 2.4841, 3)
    """
    v = clean(values)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    m = float(v.mean())
    if n < 2:
        return m, math.nan, n
    return m, t_quantile(n - 1, confidence) * float(v.std(ddof=1)) / math.sqrt(n), n


def mean_sd(values: Iterable[float | None]) -> tuple[float, float, int]:
    """Mean, sample standard deviation (n − 1) and count (NaN sd for fewer than two)."""
    v = clean(values)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if n > 1 else math.nan, n


def jain(values: Iterable[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²); NaN for no values or all zero.

    >>> jain([1, 1, 1, 1]), jain([1, 0, 0, 0])
    (1.0, 0.25)
    """
    v = np.asarray(list(values), dtype=float)
    s2 = float((v * v).sum())
    return float(v.sum()) ** 2 / (len(v) * s2) if len(v) and s2 > 0 else math.nan


def percentile(values: Sequence[float], p: float, method: str = "linear") -> float:
    """The ``p``-th percentile (0…100); NaN for no values.

    ``method="linear"`` interpolates between order statistics (numpy's default);
    ``method="nearest-rank"`` is the smallest value with at least p % of the values at or
    below it, as ``wirelab analyze`` reports latency percentiles.

    >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 50, "nearest-rank")
    (2.5, 2.0)
    """
    v = clean(values)
    if len(v) == 0:
        return math.nan
    np_method = {"linear": "linear", "nearest-rank": "inverted_cdf"}[method]
    return float(np.percentile(v, p, method=np_method))


def ecdf(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values (NaN dropped) and their empirical CDF i/n."""
    v = np.sort(clean(values))
    return v, np.arange(1, len(v) + 1) / len(v) if len(v) else v


def drift(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares slope of ys over xs, its standard error, and the mean of ys."""
    r = _st.linregress(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
    return float(r.slope), float(r.stderr), float(np.mean(ys))
