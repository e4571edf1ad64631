"""The exact kernel model on a PyTorch device (``device=`` of the Subquantile estimators).

Imported only when an estimator is given a ``device``; needs the ``gpu`` extra (PyTorch).

What runs where, in float64:

* on the device: the n x n kernel matrix (:meth:`DeviceKernel.compute`), every product with it
  (outputs K w of the solvers, the gradient solvers' steps, the power/Lanczos iterations of the
  step size), the Cholesky factorization and solves of K_SS + alpha I of the alternating ridge
  solver (:class:`DeviceRidgeSubsetFitter`) and the whitening of the classifier's L-BFGS
  (:class:`DeviceLbfgsSubsetFitter`);
* on the host (NumPy): everything of size O(n) per iteration: the losses, the subquantile, the
  intercept and the L-BFGS updates of the classifier.

:class:`DeviceKernel` takes and returns NumPy arrays, so the shared
:class:`~robustkernel._problem.Problem` and the solvers run unchanged on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..._torch_device import torch_device
from .._solve.objective import Coefficients, Problem
from .._solve.refits import (
    NOT_PSD,
    LbfgsSubsetFitter,
    RidgeSubsetFitter,
    jitters,
    ridge_coefficients,
    ridge_rhs,
)

DTYPE = torch.float64


def _linear(X: torch.Tensor, gamma: float, degree: float, coef0: float) -> torch.Tensor:
    return X @ X.T


# The kernels below work in place on one n x n buffer, so the kernel matrix is the only O(n^2)
# allocation, in the order of operations of sklearn.metrics.pairwise.


def _polynomial(X: torch.Tensor, gamma: float, degree: float, coef0: float) -> torch.Tensor:
    return (X @ X.T).mul_(gamma).add_(coef0).pow_(degree)


def _sigmoid(X: torch.Tensor, gamma: float, degree: float, coef0: float) -> torch.Tensor:
    return (X @ X.T).mul_(gamma).add_(coef0).tanh_()


def _rbf(X: torch.Tensor, gamma: float, degree: float, coef0: float) -> torch.Tensor:
    """exp(-gamma ||x - x'||^2), the distances computed as sklearn's euclidean_distances does."""
    norms = torch.sum(X * X, dim=1)
    distances = (X @ X.T).mul_(-2.0).add_(norms[:, None]).add_(norms[None, :]).clamp_(min=0.0)
    return distances.fill_diagonal_(0.0).mul_(-gamma).exp_()


def _laplacian(X: torch.Tensor, gamma: float, degree: float, coef0: float) -> torch.Tensor:
    return torch.cdist(X, X, p=1.0).mul_(-gamma).exp_()


def _cosine(X: torch.Tensor, gamma: float, degree: float, coef0: float) -> torch.Tensor:
    norms = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    unit = X / torch.where(norms == 0.0, torch.ones_like(norms), norms)
    return unit @ unit.T


_KERNELS: dict[str, Callable[[torch.Tensor, float, float, float], torch.Tensor]] = {
    "linear": _linear,
    "polynomial": _polynomial,
    "poly": _polynomial,
    "sigmoid": _sigmoid,
    "rbf": _rbf,
    "laplacian": _laplacian,
    "cosine": _cosine,
}
DEVICE_KERNELS = (*sorted(_KERNELS), "precomputed")


class DeviceKernel:
    """An n x n kernel matrix held on a torch device; ``K @ w`` takes and returns NumPy arrays.

    It has the ``shape``, ``dtype``, ``matvec`` and ``matmat`` of a SciPy linear operator, so the
    top eigenvalue is found by the same Lanczos iterations as on the NumPy path.
    """

    dtype = np.dtype(np.float64)

    def __init__(self, matrix: torch.Tensor) -> None:
        self.matrix = matrix
        self.shape = tuple(matrix.shape)

    @classmethod
    def compute(
        cls, X: np.ndarray, kernel: str, params: dict[str, Any], device: str
    ) -> DeviceKernel:
        """The kernel matrix k(X, X) with scikit-learn's conventions, computed on ``device``."""
        if kernel not in DEVICE_KERNELS:
            raise ValueError(
                f"kernel={kernel!r} is not available with device=; use one of {DEVICE_KERNELS} "
                "or device=None."
            )
        X_device = torch.as_tensor(X, dtype=DTYPE, device=torch_device(device))
        if kernel == "precomputed":
            return cls(X_device)
        gamma = 1.0 / X.shape[1] if params["gamma"] is None else float(params["gamma"])
        matrix = _KERNELS[kernel](X_device, gamma, float(params["degree"]), float(params["coef0"]))
        return cls(matrix)

    def all_finite(self) -> bool:
        """Whether no entry is NaN or infinite."""
        return bool(torch.isfinite(self.matrix).all())

    def to_device(self, a: np.ndarray) -> torch.Tensor:
        """A NumPy array as a float64 tensor on the kernel's device."""
        return torch.as_tensor(a, dtype=DTYPE, device=self.matrix.device)

    def __matmul__(self, w: np.ndarray) -> np.ndarray:
        return (self.matrix @ self.to_device(w)).cpu().numpy()

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return self @ v

    def matmat(self, V: np.ndarray) -> np.ndarray:
        return self @ V


def _device_matrix(problem: Problem) -> DeviceKernel:
    if not isinstance(problem.K, DeviceKernel):
        raise TypeError("The device subset fitters need a Problem whose K is a DeviceKernel.")
    return problem.K


class DeviceRidgeSubsetFitter:
    """Kernel ridge regression on the kept rows S: a Cholesky factorization of K_SS + alpha I.

    The device analogue of :class:`~robustkernel._subset_fit.RidgeSubsetFitter`: one direct
    factorization on the device per subset (no Schur-complement reuse, which pays off only on
    the CPU), with the same right-hand sides and intercept centring.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self._kernel = _device_matrix(problem)

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """Minimize the objective over (w, b) with the kept rows fixed to ``mask``."""
        kernel = self._kernel
        rows = torch.as_tensor(np.flatnonzero(mask), device=kernel.matrix.device)
        system = kernel.matrix[rows[:, None], rows]
        system.diagonal().add_(alpha)
        factor, info = torch.linalg.cholesky_ex(system)
        if int(info) != 0:
            raise ValueError(NOT_PSD)
        rhs = kernel.to_device(ridge_rhs(self.problem, mask))
        solution = torch.cholesky_solve(rhs, factor).cpu().numpy()
        return ridge_coefficients(self.problem, mask, solution)


class DeviceLbfgsSubsetFitter(LbfgsSubsetFitter):
    """:class:`~robustkernel._subset_fit.LbfgsSubsetFitter` with its whitening on the device.

    The Cholesky factor L of K + delta I, the products with it and the triangular solve back
    to w run on the device; the L-BFGS iterations themselves (vectors of n x C) stay in SciPy
    on the host.
    """

    def _cholesky_factor(self) -> torch.Tensor:
        matrix = _device_matrix(self.problem).matrix
        for delta in jitters(float(torch.trace(matrix)), matrix.shape[0]):
            shifted = matrix.clone()
            shifted.diagonal().add_(delta)
            factor, info = torch.linalg.cholesky_ex(shifted)
            if int(info) == 0:
                return factor
        raise ValueError(NOT_PSD)

    def _top_eigenspace(self) -> None:
        """No preconditioner on the device (the kernel matrix is not a host array)."""
        return None

    def _forward(self, v: np.ndarray) -> np.ndarray:
        return (self._chol @ self.problem.K.to_device(v)).cpu().numpy()

    def _backward(self, G: np.ndarray) -> np.ndarray:
        return (self._chol.mT @ self.problem.K.to_device(G)).cpu().numpy()

    def _from_variable(self, v: np.ndarray) -> np.ndarray:
        v_device = self.problem.K.to_device(v)
        return torch.linalg.solve_triangular(self._chol.mT, v_device, upper=True).cpu().numpy()

    def _to_variable(self, w: np.ndarray) -> np.ndarray:
        return (self._chol.mT @ self.problem.K.to_device(w)).cpu().numpy()


_DEVICE_FITTERS: dict[type, type] = {
    RidgeSubsetFitter: DeviceRidgeSubsetFitter,
    LbfgsSubsetFitter: DeviceLbfgsSubsetFitter,
}


def device_subset_fitter(fitter: type, problem: Problem) -> Any:
    """The device counterpart of the NumPy subset fitter class ``fitter``, built on ``problem``."""
    return _DEVICE_FITTERS[fitter](problem)
