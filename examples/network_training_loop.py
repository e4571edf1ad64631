"""
Subquantile minimization in your own PyTorch training loop, and the ready-made network
======================================================================================

A small network learns y = sin(2x) from 500 rows, 20% of which have targets replaced by noise.
With the mean squared error the network bends towards the corrupted rows; with
``subquantile_loss`` (the mean of the 80% smallest per-sample losses) each step ignores the rows
it explains worst. ``SubquantileMLPRegressor`` does the same as a scikit-learn estimator and
reports the rows it left out. Needs PyTorch (``pip install robustkernel[gpu]``).

Run: python examples/network_training_loop.py
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from robustkernel import SubquantileMLPRegressor
from robustkernel.nn import subquantile_loss

torch.manual_seed(0)
rng = np.random.default_rng(0)
x = rng.uniform(-2, 2, size=(500, 1))
y = np.sin(2 * x[:, 0]) + 0.05 * rng.normal(size=500)
y[:100] = rng.normal(5, 2, size=100)  # 20% of the targets wrong
x_test = np.linspace(-2, 2, 200)[:, None]
X, Y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)


def train(loss_of_rows) -> torch.nn.Module:
    network = torch.nn.Sequential(torch.nn.Linear(1, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.Adam(network.parameters(), lr=0.01)
    for _ in range(2000):
        optimizer.zero_grad()
        per_sample = (network(X)[:, 0] - Y) ** 2  # reduction="none"
        loss_of_rows(per_sample).backward()
        optimizer.step()
    return network


def test_rmse(predict) -> float:
    return float(np.sqrt(np.mean((predict(x_test) - np.sin(2 * x_test[:, 0])) ** 2)))


def torch_predict(network):
    return lambda z: network(torch.tensor(z, dtype=torch.float32))[:, 0].detach().numpy()


plain = train(lambda losses: losses.mean())
robust = train(lambda losses: subquantile_loss(losses, epsilon=0.2))
model = SubquantileMLPRegressor(epsilon=0.2, hidden_units=32, random_state=0).fit(x, y)

print(f"test RMSE, mean squared error loop:  {test_rmse(torch_predict(plain)):.3f}")
print(f"test RMSE, subquantile_loss loop:    {test_rmse(torch_predict(robust)):.3f}")
print(f"test RMSE, SubquantileMLPRegressor:  {test_rmse(model.predict):.3f}")
print(f"corrupted rows left out by the estimator: {1 - model.inlier_mask_[:100].mean():.0%}")
# a wrong target drawn from N(5, 2) can land near the curve: one here lies 0.3 from it (six
# noise standard deviations), and the fit keeps it on some machines
far = np.abs(y[:100] - np.sin(2 * x[:100, 0])) > 0.5
share_far = 1 - model.inlier_mask_[:100][far].mean()
print(f"  of those more than 0.5 from the true curve: {share_far:.0%}")

fig, ax = plt.subplots(figsize=(6.5, 4))
wrong = np.arange(500) < 100
ax.scatter(x[:, 0], y, s=6, c=np.where(wrong, "tab:red", "0.6"), label="training rows (red: wrong)")
ax.plot(x_test[:, 0], torch_predict(plain)(x_test), label="mean loss", color="tab:red")
ax.plot(x_test[:, 0], torch_predict(robust)(x_test), label="subquantile_loss", color="tab:green")
ax.plot(x_test[:, 0], model.predict(x_test), "--", label="SubquantileMLPRegressor", color="k")
ax.set_ylim(-2, 8)
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
