"""Reproduction runners for the papers' tables and figures.

``TABLES`` maps a table name (``robustkernel reproduce NAME``) to a runner called with keyword
arguments ``n_jobs``, ``out_dir``, ``progress`` and optionally ``repetitions``; it returns a dict of
output kind to written path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .kl_claims import KL_TABLES

TABLES: dict[str, Callable[..., dict[str, Path]]] = {**KL_TABLES}

__all__ = ["TABLES"]
