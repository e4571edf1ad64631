"""
Kernel learning with a learned metric: the fit finds the one direction that matters
===================================================================================

y depends on x only through x1 + x2 (5 features). MetricKernelRidge learns a metric Sigma of
rank 1 whose direction is close to (1, 1, 0, 0, 0) / sqrt(2), without any rank penalty.

Run: python examples/learned_metric.py
"""

import matplotlib.pyplot as plt
import numpy as np

from robustkernel import MetricKernelRidge

rng = np.random.default_rng(0)
X = rng.normal(size=(120, 5))
y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.normal(size=120)

model = MetricKernelRidge(lam=0.1).fit(X, y)
direction = model.components_[0]
truth = np.array([1.0, 1.0, 0.0, 0.0, 0.0]) / np.sqrt(2.0)
print(f"rank of Sigma: {model.rank_} (of {X.shape[1]})")
print("leading direction:", np.round(direction * np.sign(direction @ truth), 3))
print(f"|cosine| with the true direction: {abs(direction @ truth):.3f}")
print("transformed shape:", model.transform(X).shape)

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.5))
left.bar(np.arange(1, X.shape[1] + 1), model.eigenvalues_)
left.set_xlabel("eigenvalue index")
left.set_ylabel("eigenvalue of Sigma")
left.set_title(f"rank_ = {model.rank_}: one direction learned")
width = 0.4
features = np.arange(1, X.shape[1] + 1)
right.bar(features - width / 2, direction * np.sign(direction @ truth), width, label="learned")
right.bar(features + width / 2, truth, width, label="true (1, 1, 0, 0, 0) / sqrt(2)")
right.set_xlabel("feature")
right.set_title("leading direction of Sigma")
right.legend(fontsize=8)
fig.tight_layout()
plt.show()
