"""
A classic outlier data set: Brownlee's stack loss
=================================================

21 days of a plant oxidizing ammonia to nitric acid: the stack loss (ammonia lost, the target)
against air flow, cooling water temperature and acid concentration. Rousseeuw & Leroy (1987,
*Robust Regression and Outlier Detection*, p. 76) document rows 1, 3, 4 and 21 (numbered from
1) as outliers. Least squares fits them well enough that none of its standardized residuals
passes the usual 2.5 cutoff: the outliers pull the fit toward themselves and are masked. The
Subquantile regressor with a linear kernel (``kernel="linear"``, everything else left at its
defaults) fits the rows it explains best and flags the four documented rows.

The data are read from statsmodels (``statsmodels.datasets.stackloss``); without statsmodels,
the same 21 rows written out below are used.

Run: python examples/classic_outliers.py
"""

import importlib.util

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression

from robustkernel import SubquantileKernelRegressor

DOCUMENTED = [1, 3, 4, 21]  # Rousseeuw & Leroy (1987), p. 76; rows numbered from 1

if importlib.util.find_spec("statsmodels") is not None:
    from statsmodels.datasets import stackloss

    table = stackloss.load_pandas().data  # STACKLOSS, AIRFLOW, WATERTEMP, ACIDCONC
    y = table["STACKLOSS"].to_numpy(dtype=float)
    X = table[["AIRFLOW", "WATERTEMP", "ACIDCONC"]].to_numpy(dtype=float)
else:
    print("statsmodels is not installed: using the copy of the stack loss table below")
    # Brownlee (1965), as in R's datasets::stackloss: stack loss, air flow, water temp., acid.
    table = np.array([
        [42, 80, 27, 89], [37, 80, 27, 88], [37, 75, 25, 90], [28, 62, 24, 87],
        [18, 62, 22, 87], [18, 62, 23, 87], [19, 62, 24, 93], [20, 62, 24, 93],
        [15, 58, 23, 87], [14, 58, 18, 80], [14, 58, 18, 89], [13, 58, 17, 88],
        [11, 58, 18, 82], [12, 58, 19, 93], [8, 50, 18, 89], [7, 50, 18, 86],
        [8, 50, 19, 72], [8, 50, 19, 79], [9, 50, 20, 80], [15, 56, 20, 82],
        [15, 70, 20, 91],
    ], dtype=float)  # fmt: skip
    y, X = table[:, 0], table[:, 1:]
n, p = X.shape
rows = np.arange(1, n + 1)

ols = LinearRegression().fit(X, y)
robust = SubquantileKernelRegressor(kernel="linear", random_state=0).fit(X, y)
flagged = ~robust.inlier_mask_

# Standardized residuals: residual / s, with s the residual standard deviation of the rows the
# fit kept (all rows for least squares), n - p - 1 degrees of freedom.
ols_residuals = y - ols.predict(X)
ols_scale = np.sqrt(np.sum(ols_residuals**2) / (n - p - 1))
robust_residuals = y - robust.predict(X)
kept = robust.inlier_mask_
robust_scale = np.sqrt(np.sum(robust_residuals[kept] ** 2) / (kept.sum() - p - 1))
standardized = {
    "least squares": ols_residuals / ols_scale,
    'SubquantileKernelRegressor(kernel="linear")': robust_residuals / robust_scale,
}

print("documented outliers (Rousseeuw & Leroy):", DOCUMENTED)
print("flagged by SubQ (inlier_mask_ False):", rows[flagged].tolist())
print(f"SubQ epsilon_ {robust.epsilon_:.3f}: {flagged.sum()} of {n} rows left out")
print("least squares rows beyond 2.5:", rows[np.abs(standardized["least squares"]) > 2.5].tolist())
print("standardized residuals of the documented rows:")
for name, residuals in standardized.items():
    values = ", ".join(f"{row}: {residuals[row - 1]:+.2f}" for row in DOCUMENTED)
    print(f"  {name}: {values}")

# The classic outlier plot: standardized residual per row, the ±2.5 band, flagged rows red and
# labelled with their row number.
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
documented = np.isin(rows, DOCUMENTED)
for ax, (name, residuals) in zip(axes, standardized.items(), strict=True):
    marked = flagged if name != "least squares" else np.abs(residuals) > 2.5
    ax.axhspan(-2.5, 2.5, color="0.92", zorder=0)
    ax.axhline(0, color="0.5", linewidth=0.8)
    ax.vlines(rows, 0, residuals, color="0.6", linewidth=0.8)
    ax.scatter(
        rows[~marked],
        residuals[~marked],
        s=28,
        color="tab:blue",
        zorder=3,
        label="kept" if name != "least squares" else "within ±2.5",
    )
    ax.scatter(
        rows[marked],
        residuals[marked],
        s=40,
        color="tab:red",
        zorder=3,
        label="flagged (inlier_mask_ False)" if name != "least squares" else "beyond ±2.5",
    )
    ax.scatter(
        rows[documented],
        residuals[documented],
        s=110,
        facecolors="none",
        edgecolors="k",
        linewidths=0.9,
        zorder=4,
        label="documented outlier",
    )
    for row in rows[documented | marked]:
        value = residuals[row - 1]
        ax.annotate(
            str(row),
            (row, value),
            xytext=(0, 9 if value >= 0 else -16),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("row (numbered from 1)")
    ax.set_xticks(rows[::2])
    ax.set_xlim(0, n + 1)
    ax.legend(fontsize=8, loc="lower left")
axes[0].set_ylabel("standardized residual")
low, high = min(map(np.min, standardized.values())), max(map(np.max, standardized.values()))
axes[0].set_ylim(low - 1.5, high + 1.5)  # room for the row labels
fig.suptitle(f"stack loss: standardized residuals, documented outliers {DOCUMENTED} circled")
fig.tight_layout()
plt.show()
