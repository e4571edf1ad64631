"""Memory: bounded row blocks for big products, and the guard of exact (n x n) kernel fits.

An exact kernel fit holds several n x n float64 matrices at once (the kernel matrix, its Cholesky
factor, factors of kept-row sub-matrices...): each estimator declares how many, and
:func:`check_fit_memory` compares that peak with the memory available before anything of size
n x n is allocated, so that a fit too large for the machine stops at once with a message naming
the remedy instead of numpy's raw ``MemoryError`` (or, worse, swapping). Products with a large
matrix (features Z, a test-by-train kernel block) run over :func:`row_chunks`, so that no
temporary exceeds ``CHUNK_ELEMENTS`` entries whatever the number of rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = [
    "CHUNK_ELEMENTS",
    "InsufficientMemoryError",
    "available_memory",
    "check_fit_memory",
    "check_memory",
    "row_chunks",
]

CHUNK_ELEMENTS = 2**22  # entries of one block of rows (32 MiB in float64)
_GIB = 2.0**30


class InsufficientMemoryError(MemoryError, ValueError):
    """An exact kernel fit would need more memory than the machine has available.

    A :class:`MemoryError`, and a :class:`ValueError` so that code reporting invalid inputs in
    one line (the command line) catches it as well.
    """


def row_chunks(n_rows: int, n_columns: int) -> Iterator[slice]:
    """Consecutive row slices holding about ``CHUNK_ELEMENTS`` entries of an n x m matrix."""
    step = max(1, CHUNK_ELEMENTS // max(n_columns, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation, or None when it cannot be told.

    Linux: ``MemAvailable`` of ``/proc/meminfo``; elsewhere the available physical pages times
    the page size (``os.sysconf``) where the platform has them.
    """
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(needed: float, what: str, remedy: str) -> None:
    """Raise :class:`InsufficientMemoryError` if ``needed`` bytes exceed the available memory.

    Parameters
    ----------
    needed : float
        Estimated peak bytes.
    what : str
        What needs them, for the message (e.g. "Foo: an exact kernel fit on n=60000 rows").
    remedy : str
        What the user can do instead, e.g. "pass n_components=...".

    Raises
    ------
    InsufficientMemoryError
        When ``needed`` exceeds the available memory (no check when that is unknown).
    """
    available = available_memory()
    if available is None or needed <= available:
        return
    raise InsufficientMemoryError(
        f"{what} needs about {needed / _GIB:.1f} GiB, but only {available / _GIB:.1f} GiB of "
        f"memory is available; {remedy}."
    )


def check_fit_memory(estimator: str, n_samples: int, n_matrices: float, remedy: str) -> None:
    """:func:`check_memory` for an exact kernel fit holding ``n_matrices`` n x n float64 arrays.

    Parameters
    ----------
    estimator : str
        Name of the estimator, for the message.
    n_samples : int
        Number of training rows n.
    n_matrices : float
        Peak number of n x n float64 matrices the fit holds at once.
    remedy : str
        What the user can do instead, e.g. "pass n_components=...".
    """
    what = (
        f"{estimator}: an exact kernel fit on n={n_samples} rows ({n_matrices:g} n x n float64 "
        "matrices at once)"
    )
    check_memory(float(n_matrices) * 8.0 * float(n_samples) ** 2, what, remedy)
