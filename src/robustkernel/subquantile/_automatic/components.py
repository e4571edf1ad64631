"""n_components="auto": the exact kernel model on small data, Nystroem features beyond.

The exact model holds n x n matrices and its automatic configuration costs O(n^3): up to
``EXACT_ROWS`` rows it fits in under a minute on one core (4000 rows: 43-45 s, 30-36 times one
``KernelRidge`` fit; ``benchmarks/bench_defaults_scale.py``). Beyond, m Nystroem features with m
growing as sqrt(n) (kernel ridge on m ~ sqrt(n) uniformly drawn landmarks keeps the statistical
rate of the exact model up to log factors: Rudi, Camoriano & Rosasco, "Less is More: Nystrom
Computational Regularization", NeurIPS 2015), at most ``MAX_COMPONENTS`` and at most what the
memory holds (``FEATURE_COPIES`` n x m float64 arrays).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..._memory import available_memory

EXACT_ROWS = 4000
COMPONENTS_PER_ROOT = 5  # m = ceil(5 sqrt(n))
MAX_COMPONENTS = 1000
MIN_COMPONENTS = 10
FEATURE_COPIES = 4  # the features, the leave-one-out projections and a chunk's temporaries


def resolve_components(params: Mapping[str, Any], n_samples: float, dask: bool = False) -> Any:
    """``params["n_components"]``, with "auto" resolved for a fit on ``n_samples`` rows.

    "auto" gives None (the exact model) for kernel="precomputed" (the n x n matrix is the
    input) and ``device`` (exact models only) and for at most
    ``EXACT_ROWS`` rows in memory; otherwise ``ceil(COMPONENTS_PER_ROOT sqrt(n))`` features,
    at most ``MAX_COMPONENTS`` and at most what ``FEATURE_COPIES`` n x m float64 arrays leave
    of the available memory (a Dask fit keeps its features on the workers: no memory cap; its
    rows may be unknown, NaN: ``MAX_COMPONENTS``).
    """
    value = params["n_components"]
    if not (isinstance(value, str) and value == "auto"):
        return value
    exact_only = params["kernel"] == "precomputed" or params["device"] is not None
    if not dask and (exact_only or n_samples <= EXACT_ROWS):
        return None
    if math.isnan(n_samples):
        return MAX_COMPONENTS
    components = min(MAX_COMPONENTS, math.ceil(COMPONENTS_PER_ROOT * math.sqrt(n_samples)))
    available = None if dask else available_memory()
    if available is not None:
        components = min(components, int(available // (FEATURE_COPIES * 8 * n_samples)))
    return max(MIN_COMPONENTS, min(components, int(n_samples)))
