"""Where the embarrassingly parallel sweeps run: local processes (joblib) or a Dask cluster.

Every sweep of the library (the reproduction tables, the lambda paths of the kernel-learning
claims) is a ``joblib.Parallel`` loop that names no backend, so :func:`parallel_backend` can send
it to a Dask cluster through joblib's ``"dask"`` backend without touching the sweep.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from joblib import parallel_config

BACKENDS = ("loky", "threading", "dask")


@contextmanager
def parallel_backend(backend: str = "loky", scheduler: str | None = None) -> Iterator[None]:
    """Run the ``joblib.Parallel`` loops inside the ``with`` block on ``backend``.

    Parameters
    ----------
    backend : {"loky", "threading", "dask"}, default="loky"
        joblib's local process pool, threads, or a Dask cluster.
    scheduler : str, default=None
        Address of a running Dask scheduler (e.g. ``"tcp://10.0.0.5:8786"``) for
        ``backend="dask"``; None starts a local cluster (``dask.distributed.LocalCluster``) for
        the duration of the block. Requires the ``dask`` extra (``pip install
        robustkernel[dask]``).

    Examples
    --------
    >>> from joblib import Parallel, delayed
    >>> with parallel_backend("threading"):
    ...     Parallel(n_jobs=2)(delayed(abs)(v) for v in (-1, -2))
    [1, 2]
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    if scheduler is not None and backend != "dask":
        raise ValueError("scheduler= is only meaningful with backend='dask'.")
    with ExitStack() as stack:
        if backend == "dask":
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError as error:
                raise ImportError(
                    "backend='dask' needs dask.distributed: pip install 'robustkernel[dask]'."
                ) from error
            if scheduler is None:
                scheduler = stack.enter_context(LocalCluster(processes=False, n_workers=2))
            stack.enter_context(Client(scheduler))
        stack.enter_context(parallel_config(backend=backend))
        yield
