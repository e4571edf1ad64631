"""Near-duplicate rows, which leave-one-out must delete together.

A tight cluster of rows sharing a wrong target (duplicated records, a stuck sensor) hides from
leave-one-out: deleting one of its rows leaves the others, which predict it exactly, so every
member gets a small leave-one-out residual and looks clean. Deleting the whole cluster at once
exposes it: the rest of the data predicts the clean value there.

Rows are near-duplicates when their distance in the kernel's feature space,
``k(x, x) + k(x', x') - 2 k(x, x')``, is at most ``DUPLICATE_DISTANCE``^2 times the median over
rows of the squared distance to the nearest other row; the groups are the connected components of
that relation. Scale-free, and for the RBF kernel independent of gamma to first order. At 0.1
(distance) a cluster of 60 rows jittered by 0.01 on 400 rows in two dimensions left four of its
rows out of the group; they were predicted by the rest of the cluster, a large gamma was chosen,
and the cluster was kept. At 0.3, clean rows pair up with a close neighbour now and then (500
uniform rows: 5% of them in two dimensions, 21% in one; Boston housing: 4 pairs), which only
makes their residuals a little more honest.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..._memory import row_chunks

DUPLICATE_DISTANCE = 0.3


def duplicate_groups(K: np.ndarray) -> list[np.ndarray]:
    """Indices of every group of two or more near-duplicate rows of the kernel matrix ``K``."""
    n = K.shape[0]
    if n < 3:
        return []
    diagonal = np.diag(K)
    tolerance = 1e-12 * max(float(np.abs(diagonal).mean()), np.finfo(float).tiny)
    # Two passes over the chunks: keeping them would hold a second n x n array.
    nearest = np.concatenate([distances.min(axis=1) for _, distances in _distances(K)])
    threshold = DUPLICATE_DISTANCE**2 * float(np.median(nearest)) + tolerance
    pairs = [
        (index[i], j)
        for index, distances in _distances(K)
        for i, j in [np.nonzero(distances <= threshold)]
    ]
    source = np.concatenate([i for i, _ in pairs])
    if source.size == 0:
        return []
    target = np.concatenate([j for _, j in pairs])
    graph = coo_matrix((np.ones(source.size), (source, target)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    counts = np.bincount(labels)
    return [np.flatnonzero(labels == label) for label in np.flatnonzero(counts > 1)]


def deletable_groups(K: np.ndarray, fit_intercept: bool) -> list[np.ndarray]:
    """The :func:`duplicate_groups` of the kept rows' kernel matrix ``K`` that leave-one-out can
    delete together.

    With an intercept, a group of every kept row is not one of them: without it nothing is left
    to fit, and its block of the inverse system is singular (the ones vector, the intercept's
    direction, spans its null space; identical rows make numpy's solve raise). Its rows keep their
    one-row leave-one-out residuals. Without an intercept the fit without every row is f = 0, and
    the group is deleted as any other.
    """
    groups = duplicate_groups(K)
    if fit_intercept:
        groups = [group for group in groups if group.size < K.shape[0]]
    return groups


def _distances(K: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Row indices and squared feature-space distances to every row (inf to itself), by
    chunks of rows."""
    n = K.shape[0]
    diagonal = np.diag(K)
    for rows in row_chunks(n, n):
        index = np.arange(n)[rows]
        distances = diagonal[rows, None] + diagonal[None, :] - 2.0 * K[rows]
        distances[np.arange(index.size), index] = np.inf
        yield index, distances
