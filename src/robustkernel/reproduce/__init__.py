"""Reproduction runners for the papers' tables and figures.

``TABLES`` maps a table name (``robustkernel reproduce NAME``) to a runner called with keyword
arguments ``n_jobs``, ``out_dir``, ``progress`` and optionally ``repetitions``; it returns a dict of
output kind to written path. :func:`parallel_backend` runs any joblib sweep (a table, or a
user's own grid search) on local processes or on a Dask cluster.

The tables are named after the papers they reproduce, by these labels:

- **000**: "Subquantile Minimization for Kernel Learning in the Huber eps-Contamination Model",
  anonymous ICML submission version of 002 (Tables 1, 3, 4).
- **001**: A. Rathnashyam and A. Gittens, "Kernel Learning in the Huber eps-Contamination Model",
  the later theory version (kernelized GLMs, two-layer networks; no table reproduced).
- **002**: A. Rathnashyam and A. Gittens, "Subquantile Minimization for Kernel Learning in the
  Huber eps-Contamination Model", September 2023 draft (Tables 1-5; momentum and Nesterov).
- **003**: Y. Chen, Y. Li, K. Liu and F. Ruan, "Kernel Learning in Ridge Regression
  'Automatically' Yields Exact Low Rank Solution", arXiv:2310.11736 (Section 7, claims (i)-(v)).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ._parallel import parallel_backend
from .kl_claims import KL_TABLES
from .subq_figures import SUBQ_FIGURES
from .subq_tables import SUBQ_TABLES

TABLES: dict[str, Callable[..., dict[str, Path]]] = {**KL_TABLES, **SUBQ_TABLES, **SUBQ_FIGURES}

__all__ = ["TABLES", "parallel_backend"]
