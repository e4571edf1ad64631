"""Reproduction runners for the papers' tables and figures.

``TABLES`` maps a table name (``robustkernel reproduce NAME``) to a runner called with keyword
arguments ``n_jobs``, ``out_dir``, ``progress`` and optionally ``repetitions``; it returns a dict of
output kind to written path. :func:`parallel_backend` runs any joblib sweep (a table, or a
user's own grid search) on local processes or on a Dask cluster.
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
