"""
Flipped labels: SubquantileKernelClassifier against cleanlab
============================================================

Two interleaved half moons, 300 training rows, of which 20% have their label flipped. The
Subquantile classifier with no arguments finds the flipped labels by confident learning on
out-of-fold probabilities (``epsilon="auto"``), fits on the rows it keeps and reports the
others in ``inlier_mask_``. cleanlab's ``CleanLearning`` does the same around a probabilistic
SVC. Both are compared with a plain ``SVC()`` on 1000 clean test rows, and the rows each one
flagged with the rows that were really flipped (precision: flagged rows that were flipped;
recall: flipped rows that were flagged).

Uniform flips are mild for a smooth model, so the accuracies stay within a few points of each
other (on larger benchmarks a tuned SVC with no noise handling is often as accurate,
BENCHMARKS.md); what the noise-aware fits add is the list of suspect rows. cleanlab is
optional: without it, only the Subquantile panel is drawn.

Run: python examples/label_noise.py
"""

import importlib.util

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_moons
from sklearn.svm import SVC

from robustkernel import SubquantileKernelClassifier
from robustkernel.corruption import corrupt, outlier_precision_recall

X, y = make_moons(n_samples=1300, noise=0.2, random_state=0)
X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
bad = corrupt(X_train, y_train, "flip", 0.2, random_state=0)  # 60 labels flipped
flipped = np.isin(np.arange(bad.y.size), bad.index)

# Each method: (test accuracy, rows it flagged, the fitted model).
results = {}
subq = SubquantileKernelClassifier().fit(bad.X, bad.y)  # no arguments
results["SubquantileKernelClassifier()"] = (subq.score(X_test, y_test), ~subq.inlier_mask_, subq)

if importlib.util.find_spec("cleanlab") is not None:
    from cleanlab.classification import CleanLearning

    # SVC with Platt-scaled probabilities (what SVC(probability=True) did before scikit-learn
    # deprecated it); find_label_issues_kwargs={"n_jobs": 1}: one process.
    svc_proba = CalibratedClassifierCV(SVC(random_state=0), ensemble=False)
    clean = CleanLearning(svc_proba, seed=0, find_label_issues_kwargs={"n_jobs": 1})
    clean.fit(bad.X, bad.y)
    issues = clean.get_label_issues()["is_label_issue"].to_numpy()
    results["cleanlab CleanLearning(SVC)"] = (clean.score(X_test, y_test), issues, clean)
else:
    print("cleanlab is not installed (pip install cleanlab): its panel is left out")

svc = SVC().fit(bad.X, bad.y)
print(f"{bad.index.size} of {bad.y.size} training labels flipped")
print(f"test accuracy: plain SVC() {svc.score(X_test, y_test):.3f}")
for name, (accuracy, flagged, _) in results.items():
    precision, recall = outlier_precision_recall(~flagged, bad.index)
    print(
        f"test accuracy: {name} {accuracy:.3f}; {flagged.sum()} rows flagged, "
        f"precision {precision:.2f}, recall {recall:.2f}"
    )
print(f"SubQ estimated epsilon_ {subq.epsilon_:.3f} (true 0.20)")

# Training rows coloured by the label the fit was given; flipped rows as crosses, the rows each
# fit flagged circled; the line is where the fitted model's prediction changes.
grid_x, grid_y = np.meshgrid(np.linspace(-1.6, 2.6, 300), np.linspace(-1.2, 1.7, 250))
grid = np.column_stack([grid_x.ravel(), grid_y.ravel()])
fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 4.6), squeeze=False)
for ax, (name, (accuracy, flagged, model)) in zip(axes[0], results.items(), strict=True):
    colors = np.where(bad.y == 1, "tab:orange", "tab:blue")
    ax.scatter(*bad.X[~flipped].T, c=colors[~flipped], s=14, linewidths=0)
    ax.scatter(*bad.X[flipped].T, c=colors[flipped], s=34, marker="X", linewidths=0)
    ax.scatter(*bad.X[flagged].T, s=80, facecolors="none", edgecolors="k", linewidths=0.8)
    ax.contour(
        grid_x,
        grid_y,
        model.predict(grid).reshape(grid_x.shape),
        levels=[0.5],
        colors="k",
        linewidths=1.2,
    )
    precision, recall = outlier_precision_recall(~flagged, bad.index)
    ax.set_title(
        f"{name}\ntest accuracy {accuracy:.3f}, flags: precision {precision:.2f}, "
        f"recall {recall:.2f}",
        fontsize=9,
    )
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
handles = [
    plt.Line2D([], [], marker="o", ls="", color="tab:blue", label="given label 0"),
    plt.Line2D([], [], marker="o", ls="", color="tab:orange", label="given label 1"),
    plt.Line2D([], [], marker="X", ls="", color="gray", label="label flipped (truth)"),
    plt.Line2D([], [], marker="o", ls="", mfc="none", mec="k", ms=9, label="flagged by the fit"),
    plt.Line2D([], [], color="k", label="decision boundary"),
]
columns = 5 if len(results) > 1 else 3  # one panel (no cleanlab): the legend on two lines
fig.legend(handles=handles, loc="lower center", ncol=columns, fontsize=8, frameon=False)
fig.tight_layout(rect=(0, 0.06 if len(results) > 1 else 0.11, 1, 1))
plt.show()
