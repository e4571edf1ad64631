"""
One fit on a Dask cluster: the same model as in memory
======================================================

20,000 rows with 10% of the targets replaced by noise, held as a chunked ``dask.array``, are
fitted by ``SubquantileKernelRegressor(kernel="rbf")`` on a ``distributed.LocalCluster`` of two
workers. Given Dask arrays, ``fit`` runs the alternating solver as passes over the row chunks
on the workers, and the per-row results (``inlier_mask_``, ``outlier_scores_``) stay there as
Dask arrays until they are computed. The same rows are then fitted in memory: the Dask fit
chooses epsilon, alpha and gamma by the in-memory fit on up to 20,000 rows (here all of them)
and runs the alternating fit at those values over the chunks, so it agrees to 1e-8 with the
in-memory fit given those values, and in all but a handful of rows with the in-memory fit that
chose them.

On a real cluster, replace the ``LocalCluster`` by ``Client("tcp://scheduler:8786")`` and
``da.from_array`` by a table the workers read themselves (``dask.dataframe.read_parquet``; see
the user guide, section 9). A Dask fit pays off only when the data do not fit in one machine's
memory: on rows that fit, the in-memory fit is faster.

Run: python examples/dask_fit.py
"""

import time

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from robustkernel import SubquantileKernelRegressor
from robustkernel.corruption import corrupt, outlier_precision_recall

n = 20_000
rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, size=(n, 1))
y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 0] + 0.1 * rng.normal(size=n)
bad = corrupt(X, y, "label", 0.1, random_state=0)  # y <- N(5, 5) on 10% of the rows
X_dask = da.from_array(bad.X, chunks=(2500, 1))  # 8 chunks of 2500 rows
y_dask = da.from_array(bad.y, chunks=2500)

# n_components=200 Nystroem features: enough for a curve in one variable, and faster than the
# default ("auto": ceil(5 sqrt(n)) = 708 here). kernel="rbf": the alternating solver over the
# chunks (the default kernel="auto" runs no solver: it fits kernel ridge once on the rows its
# high-breakdown start keeps). Everything else is left at its defaults.
settings = {"kernel": "rbf", "n_components": 200, "random_state": 0}

# Two workers of one thread each. processes=False runs them as threads of this process: they
# start at once and the script needs no `if __name__ == "__main__":` guard (worker processes
# re-import the script that starts them); with processes=True each worker is its own process,
# as on a real cluster, and the fit is the same.
with (
    LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster,
    Client(cluster) as client,
):
    workers = len(client.nthreads())
    print(f"{workers} workers, {X_dask.numblocks[0]} chunks of {X_dask.chunks[0][0]} rows")
    start = time.perf_counter()
    model = SubquantileKernelRegressor(**settings).fit(X_dask, y_dask)
    dask_seconds = time.perf_counter() - start
    # the per-row attributes (inlier_mask_, outlier_scores_) are Dask arrays on the workers:
    # bring over what you need before the cluster closes
    inliers = model.inlier_mask_.compute()

start = time.perf_counter()
memory = SubquantileKernelRegressor(**settings).fit(bad.X, bad.y)
memory_seconds = time.perf_counter() - start
same_values = SubquantileKernelRegressor(
    epsilon=model.epsilon_, alpha=model.alpha_, gamma=model.gamma_, **settings
).fit(bad.X, bad.y)

X_test = np.linspace(-3, 3, 400)[:, None]
curve = model.predict(X_test)
print(f"fit time: Dask {dask_seconds:.1f} s, in memory {memory_seconds:.1f} s")
print(
    f"Dask fit: epsilon_ {model.epsilon_:.4f}, alpha_ {model.alpha_:.3g}, "
    f"gamma_ {model.gamma_:.3g}, {model.n_iter_} passes of the alternation"
)
precision, recall = outlier_precision_recall(inliers, bad.index)
print(f"Dask flags against the replaced targets: precision {precision:.3f}, recall {recall:.3f}")
for name, other in [
    ("in memory, the same settings", memory),
    ("in memory, the Dask fit's values", same_values),
]:
    agree = np.mean(inliers == other.inlier_mask_)
    difference = np.max(np.abs(curve - other.predict(X_test)))
    print(
        f"Dask vs {name}: same flag on {100 * agree:.2f}% of the rows, "
        f"largest prediction difference {difference:.1e}"
    )

# Left: the rows (one in five drawn) with the curve the Dask fit learned, the rows it flagged
# in red. Right: the residuals of every row, and the cut beyond which the fit left rows out.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
shown = np.arange(n) % 5 == 0
left.scatter(bad.X[shown & inliers, 0], bad.y[shown & inliers], s=3, color="tab:blue", label="kept")
left.scatter(
    bad.X[shown & ~inliers, 0],
    bad.y[shown & ~inliers],
    s=3,
    color="tab:red",
    label="flagged (inlier_mask_ False)",
)
left.plot(X_test[:, 0], curve, color="k", linewidth=1.5, label="Dask fit")
left.set_xlabel("x")
left.set_ylabel("y")
left.set_title(f"{n} rows, 10% targets replaced (every 5th row shown)", fontsize=10)
left.legend(fontsize=8, markerscale=4, loc="upper left")
residuals = bad.y - model.predict(bad.X)
cut = np.sqrt(model.threshold_)  # threshold_: the largest squared residual the fit kept
bins = np.linspace(residuals.min(), residuals.max(), 120)
right.hist(residuals[inliers], bins=bins, color="tab:blue", label="kept")
right.hist(residuals[~inliers], bins=bins, color="tab:red", label="flagged")
for sign in (-1, 1):
    right.axvline(
        sign * cut,
        color="k",
        linestyle="--",
        linewidth=1,
        label=f"sqrt(threshold_) = {cut:.2f}" if sign > 0 else None,
    )
right.set_yscale("log")
right.set_xlabel("residual y - prediction")
right.set_ylabel("rows")
right.set_title("residuals of the Dask fit", fontsize=10)
right.legend(fontsize=8)
fig.tight_layout()
plt.show()
