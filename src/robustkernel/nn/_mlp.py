"""Two-layer networks f(x) = sum_k a_k sigma(w_k^T x + c_k) + b trained by Subquantile descent."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.special import expit, logsumexp, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import RobustScaler
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._fractions import n_kept
from .._kernel_model.estimator import class_labels
from .._memory import InsufficientMemoryError, check_memory, row_chunks
from .._torch_device import torch_device
from .._version_stamp import VersionStamped
from ..trimming import smallest
from ._loss import subquantile_loss

ACTIVATIONS = ("tanh", "relu", "sigmoid", "softplus")
SOLVERS = ("gd", "momentum", "nesterov", "adam")
MAD_TO_SD = 1.4826  # the median absolute deviation of N(0, 1) is 1 / 1.4826
IQR_TO_SD = 1.3489795003921634  # the interquartile range of N(0, 1), which RobustScaler uses
EPS = float(np.finfo(np.float64).eps)
# The networks train in float32: every scaled input and target must be representable there.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _median(values: np.ndarray, axis: int | None = None) -> Any:
    """The median, without the overflow of np.median's mean of the two middle values."""
    low = np.quantile(values, 0.5, axis=axis, method="lower")
    high = np.quantile(values, 0.5, axis=axis, method="higher")
    median = np.where(low == high, low, low / 2.0 + high / 2.0)
    return float(median) if axis is None else median


def _input_scaler(X: np.ndarray) -> RobustScaler:
    """``RobustScaler(unit_variance=True)`` fitted on X, with scales that follow X's units.

    RobustScaler takes an interquartile range below 10 x the machine epsilon as a constant
    feature and leaves it unscaled, so that features in tiny units (1e-30) would reach the
    network as zeros. Here such a feature is scaled by its interquartile range where that is
    not roundoff of its magnitude, else (more than half of the values equal) by the median of
    its nonzero deviations from the median (so a 0/1 feature is scaled as RobustScaler scales
    it); a constant feature stays unscaled. The medians avoid np.median's overflow near the
    largest floats.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        scaler = RobustScaler(unit_variance=True).fit(X)
        if not np.all(np.isfinite(scaler.center_)):
            scaler.center_ = _median(X, axis=0)
        low, high = np.percentile(X, [25.0, 75.0], axis=0)
        spread = high - low
        magnitude = np.maximum(np.abs(low), np.abs(high))
        for column in np.flatnonzero(spread < 10.0 * EPS):
            if spread[column] > 10.0 * EPS * magnitude[column]:
                scaler.scale_[column] = spread[column] / IQR_TO_SD
                continue
            deviations = np.abs(X[:, column] - scaler.center_[column])
            nonzero = deviations[deviations > 10.0 * EPS * np.abs(scaler.center_[column])]
            if nonzero.size:
                scaler.scale_[column] = _median(nonzero) / IQR_TO_SD
    return scaler


def _largest_magnitude(values: np.ndarray) -> float:
    """max |values|, inf when one of them is NaN (an overflow on the way)."""
    magnitudes = np.abs(values)
    return float(np.max(np.where(np.isnan(magnitudes), np.inf, magnitudes), initial=0.0))


def _load_torch() -> Any:
    """PyTorch, imported on first use; a clear error without it."""
    try:
        import torch
    except ImportError as error:
        raise ImportError(
            "The Subquantile networks need PyTorch, which is not installed: pip install "
            "robustkernel[gpu] (or torch)."
        ) from error
    return torch


def network_outputs(
    Xs: np.ndarray, coefs: list[np.ndarray], intercepts: list[np.ndarray], activation: str
) -> np.ndarray:
    """The two-layer network with weights ``coefs`` and ``intercepts`` on scaled inputs, in
    NumPy (float64): outputs (n, n_outputs).

    Runs over blocks of rows, so that the hidden activations stay small whatever n.
    """
    outputs = np.empty((Xs.shape[0], coefs[1].shape[1]))
    for rows in row_chunks(Xs.shape[0], coefs[0].shape[1]):
        hidden = Xs[rows] @ coefs[0] + intercepts[0]
        if activation == "tanh":
            hidden = np.tanh(hidden)
        elif activation == "relu":
            hidden = np.maximum(hidden, 0.0)
        elif activation == "sigmoid":
            hidden = expit(hidden)
        else:
            hidden = np.logaddexp(0.0, hidden)
        outputs[rows] = hidden @ coefs[1] + intercepts[1]
    return outputs


class _BaseSubquantileMLP(VersionStamped, BaseEstimator):
    """A two-layer network fitted on the (1 - epsilon) fraction of rows it explains best."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left")],
        "hidden_units": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "solver": [StrOptions(set(SOLVERS))],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither")],
        "momentum": [Interval(Real, 0.0, 1.0, closed="left")],
        "alpha": [Interval(Real, 0.0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "selection": [StrOptions({"batch", "refresh"})],
        "refresh_every": [Interval(Integral, 1, None, closed="left")],
        "smoothing": [Interval(Real, 0.0, None, closed="neither"), None],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "device": [str, None],
        "verbose": ["verbose"],
    }

    # -- what subclasses define -----------------------------------------------------------------

    def _encode(self, y: Any) -> np.ndarray:
        """Targets as the network's training array (regression: scaled; labels: indices)."""
        raise NotImplementedError

    def _n_outputs(self) -> int:
        raise NotImplementedError

    def _row_losses(self, torch: Any, outputs: Any, targets: Any) -> Any:
        """Per-row losses of the network outputs, a tensor of shape (n,)."""
        raise NotImplementedError

    def _numpy_losses(self, outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The same losses in NumPy (float64), for the fitted attributes."""
        raise NotImplementedError

    def _loss_scale(self) -> float:
        """Factor from training-scale losses to the reported ones."""
        return 1.0

    def _in_output_units(self, outputs: np.ndarray) -> np.ndarray:
        """Network outputs as the values the prediction methods start from."""
        return outputs

    # -- fitting --------------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> _BaseSubquantileMLP:
        """Train the network by Subquantile gradient descent.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (scaled inside by the median and the interquartile range).
        y : array-like of shape (n_samples,)
            Targets (regressor) or labels (classifier).

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            X or y hold values that the float32 training cannot represent after the internal
            scaling, or the training diverged (a non-finite objective or weights: lower
            ``learning_rate``). On any error the estimator keeps the state it had before the
            call (fitted or not): nothing of the failed fit is stored.
        InsufficientMemoryError
            (a ValueError and a MemoryError) The network and its activations would not fit in
            the memory available; lower ``hidden_units`` or the number of rows.
        """
        state = dict(self.__dict__)
        try:
            return self._fit(X, y)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)
            raise

    def _fit(self, X: Any, y: Any) -> _BaseSubquantileMLP:
        torch = _load_torch()
        with np.errstate(over="ignore", invalid="ignore"):  # sklearn's sum of huge values
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        targets = self._encode(y)
        scaler = _input_scaler(X)
        with np.errstate(over="ignore", invalid="ignore"):
            Xs = scaler.transform(X)
        self._check_float32_range(Xs)
        device = self._torch_device(torch)
        self._check_memory(torch, device, *X.shape)
        generator = torch.Generator().manual_seed(
            int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        )
        network = self._network(torch, X.shape[1], generator).to(device)
        inputs = torch.as_tensor(Xs, dtype=torch.float32, device=device)
        target_tensor = torch.as_tensor(targets, device=device)
        if target_tensor.is_floating_point():
            target_tensor = target_tensor.float()
        optimizer = self._optimizer(torch, network)
        history, n_iter, converged = self._train(
            torch, network, optimizer, inputs, target_tensor, generator
        )
        layers = (network[0], network[2])
        coefs = [layer.weight.detach().cpu().double().numpy().T for layer in layers]
        intercepts = [layer.bias.detach().cpu().double().numpy() for layer in layers]
        # The kept rows are chosen on the training-scale losses (exact whatever the targets'
        # units); the reported losses are in the targets' units, inf where they overflow.
        outputs = network_outputs(Xs, coefs, intercepts, self.activation)
        losses = self._numpy_losses(outputs, targets)
        kept = smallest(losses, n_kept(len(losses), self.epsilon))
        scores = self._in_target_units(losses)
        self.scaler_, self.coefs_, self.intercepts_ = scaler, coefs, intercepts
        self.inlier_mask_, self.outlier_scores_ = kept, scores
        self.threshold_ = float(np.max(scores[kept]))
        self.objective_history_ = self._in_target_units(np.asarray(history))
        self.n_iter_, self.converged_ = n_iter, converged
        return self

    def _check_float32_range(self, Xs: np.ndarray) -> None:
        """Refuse scaled inputs that float32, the training's precision, cannot hold."""
        magnitudes = np.abs(Xs)
        if np.all(magnitudes <= FLOAT32_MAX):  # False for NaN too
            return
        column = int(np.argmax(np.any(~(magnitudes <= FLOAT32_MAX), axis=0)))
        raise ValueError(
            f"X holds values too large for the network, which trains in float32: after the "
            f"internal scaling (median and interquartile range), feature {column} reaches "
            f"|x| = {_largest_magnitude(Xs[:, column]):.3g}, beyond float32's "
            f"{FLOAT32_MAX:.3g}. Such values are extreme outliers of their feature (a "
            "scaler such as StandardScaler or RobustScaler cannot bring them in range): clip or "
            "remove them, or transform the feature (e.g. np.log1p or QuantileTransformer)."
        )

    def _check_memory(self, torch: Any, device: Any, n_samples: int, n_features: int) -> None:
        """Refuse a network whose training would not fit in memory, before allocating it."""
        hidden, outputs = self.hidden_units, self._n_outputs()
        parameters = n_features * hidden + hidden + hidden * outputs + outputs
        # float32: weights, gradients and two optimizer buffers; the data; the activations of
        # the full data (pre-activation, activation and their gradients) and the outputs.
        floats = 4.0 * parameters + n_samples * (n_features + 1.0)
        floats += n_samples * (4.0 * hidden + 3.0 * outputs)
        needed = 4.0 * floats
        what = (
            f"{type(self).__name__}: training hidden_units={hidden} on {n_samples} rows x "
            f"{n_features} features"
        )
        remedy = "lower hidden_units or train on fewer rows"
        if device.type == "cuda":
            free = float(torch.cuda.mem_get_info(device)[0])
            if needed > free:
                raise InsufficientMemoryError(
                    f"{what} needs about {needed / 2**30:.1f} GiB, but only "
                    f"{free / 2**30:.1f} GiB of GPU memory is free on {device}; {remedy}."
                )
        else:
            check_memory(needed, what, remedy)

    def _in_target_units(self, values: np.ndarray) -> np.ndarray:
        """Training-scale losses in the targets' units: inf where they overflow, never NaN."""
        values = np.asarray(values, dtype=np.float64)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            scaled = values * np.float64(self._loss_scale())
        return np.where(values == 0.0, 0.0, scaled)

    def _forward(self, Xs: np.ndarray) -> np.ndarray:
        """The trained network on scaled inputs, in NumPy (float64): outputs (n, n_outputs)."""
        return network_outputs(Xs, self.coefs_, self.intercepts_, self.activation)

    def _torch_device(self, torch: Any) -> Any:
        """The torch device of ``device``; a ValueError naming it when it cannot train here."""
        if self.device is None:
            return torch.device("cpu")
        device = torch_device(self.device)
        if device.type == "meta":
            raise ValueError(
                f"device={self.device!r} holds no data and cannot train a network; use 'cpu', "
                "'cuda' or None (the CPU)."
            )
        try:
            torch.zeros(1, device=device)
        except RuntimeError as error:
            raise ValueError(
                f"device={self.device!r} is not available with this PyTorch build; use 'cpu', "
                "'cuda' (with a CUDA build and GPU) or None (the CPU)."
            ) from error
        return device

    def _network(self, torch: Any, n_features: int, generator: Any) -> Any:
        """Linear - activation - linear, Glorot-uniform weights and zero biases."""
        activations = {
            "tanh": torch.nn.Tanh,
            "relu": torch.nn.ReLU,
            "sigmoid": torch.nn.Sigmoid,
            "softplus": torch.nn.Softplus,
        }
        network = torch.nn.Sequential(
            torch.nn.Linear(n_features, self.hidden_units),
            activations[self.activation](),
            torch.nn.Linear(self.hidden_units, self._n_outputs()),
        )
        for layer in (network[0], network[2]):
            bound = float(np.sqrt(6.0 / (layer.in_features + layer.out_features)))
            with torch.no_grad():
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.zero_()
        return network

    def _optimizer(self, torch: Any, network: Any) -> Any:
        parameters = network.parameters()
        if self.solver == "adam":
            return torch.optim.Adam(parameters, lr=self.learning_rate)
        momentum = 0.0 if self.solver == "gd" else self.momentum
        nesterov = self.solver == "nesterov" and momentum > 0
        return torch.optim.SGD(
            parameters, lr=self.learning_rate, momentum=momentum, nesterov=nesterov
        )

    def _objective(self, torch: Any, network: Any, inputs: Any, targets: Any) -> Any:
        """The full-data objective."""
        losses = self._row_losses(torch, network(inputs), targets)
        return self._penalized(network, losses, self.epsilon)

    def _penalized(self, network: Any, losses: Any, epsilon: float) -> Any:
        """Subquantile of ``losses`` plus the ridge on the weights, (alpha / 2k) ||W||^2."""
        k = n_kept(losses.shape[0], epsilon)
        penalty = sum((layer.weight**2).sum() for layer in (network[0], network[2]))
        subquantile = subquantile_loss(losses, epsilon, smoothing=self.smoothing)
        return subquantile + (0.5 * self.alpha / k) * penalty

    def _train(
        self, torch: Any, network: Any, optimizer: Any, inputs: Any, targets: Any, generator: Any
    ) -> tuple[list[float], int, bool]:
        """Full-batch steps (``batch_size=None``) or epochs of mini-batches; stops when the
        full-data objective has not improved by ``tol`` (relative) for ``n_iter_no_change``
        iterations (epochs). Returns the objective of every iteration, their number and
        whether the objective settled; raises a ValueError when the objective or the weights
        stop being finite (the steps diverged or overflowed float32)."""
        n = inputs.shape[0]
        history: list[float] = []
        best, stalled = np.inf, 0
        converged, n_iter = False, 0
        kept = torch.arange(n, device=inputs.device)
        for iteration in range(1, self.max_iter + 1):
            if self.batch_size is None:
                optimizer.zero_grad()
                objective = self._objective(torch, network, inputs, targets)
                objective.backward()
                optimizer.step()
                value = float(objective.detach())
            else:
                if self.selection == "refresh" and (iteration - 1) % self.refresh_every == 0:
                    kept = self._kept_rows(torch, network, inputs, targets)
                self._epoch(torch, network, optimizer, inputs, targets, kept, generator)
                with torch.no_grad():
                    value = float(self._objective(torch, network, inputs, targets))
            if not np.isfinite(value):
                raise ValueError(
                    self._diverged(f"the objective became {value} at iteration {iteration}")
                )
            history.append(value)
            n_iter = iteration
            if self.verbose and iteration % 100 == 0:
                print(f"[{type(self).__name__}] iteration {iteration}: objective {value:.6g}")
            # progress relative to |best|: the smoothed objective can be negative
            if not np.isfinite(best) or value < best - self.tol * abs(best):
                best, stalled = value, 0
            else:
                stalled += 1
                if stalled >= self.n_iter_no_change:
                    converged = True
                    break
        with torch.no_grad():
            finite = all(bool(torch.isfinite(weight).all()) for weight in network.parameters())
        if not finite:  # the last full-batch step, after its objective was measured
            raise ValueError(
                self._diverged(f"the weights became non-finite at iteration {n_iter}")
            )
        if not converged:
            warnings.warn(
                f"{type(self).__name__}: the objective still decreased after max_iter="
                f"{self.max_iter} iterations; increase max_iter or learning_rate.",
                ConvergenceWarning,
                stacklevel=5,  # the caller of fit (through _fit_context and _fit)
            )
        return history, n_iter, converged

    def _diverged(self, what: str) -> str:
        """The message of a training that left the float32 range."""
        smoothing = "" if self.smoothing is None else f", smoothing={self.smoothing:g}"
        return (
            f"{type(self).__name__}: the training diverged: {what} (float32). The steps are "
            f"too large for the data: lower learning_rate (now {self.learning_rate:g}; with "
            f"alpha={self.alpha:g}{smoothing}), or scale X and y, whose extreme values can "
            "overflow float32 on the rows the network keeps. The estimator is left as it was."
        )

    def _kept_rows(self, torch: Any, network: Any, inputs: Any, targets: Any) -> Any:
        """Indices of the k rows of smallest loss under the current network."""
        with torch.no_grad():
            losses = self._row_losses(torch, network(inputs), targets)
        k = n_kept(inputs.shape[0], self.epsilon)
        return torch.topk(losses, k, largest=False).indices

    def _epoch(
        self,
        torch: Any,
        network: Any,
        optimizer: Any,
        inputs: Any,
        targets: Any,
        rows: Any,
        generator: Any,
    ) -> None:
        """One pass over ``rows`` in shuffled mini-batches. ``selection="batch"``: every batch
        keeps its own subquantile; ``"refresh"``: ``rows`` are already the kept ones, and each
        batch's losses are averaged."""
        order = rows[torch.randperm(rows.shape[0], generator=generator).to(rows.device)]
        epsilon = self.epsilon if self.selection == "batch" else 0.0
        for start in range(0, order.shape[0], self.batch_size):
            batch = order[start : start + self.batch_size]
            optimizer.zero_grad()
            losses = self._row_losses(torch, network(inputs[batch]), targets[batch])
            self._penalized(network, losses, epsilon).backward()
            optimizer.step()

    # -- prediction -----------------------------------------------------------------------------

    def _outputs(self, X: Any) -> np.ndarray:
        """Network outputs on X in the units of the prediction methods (NumPy: no PyTorch).

        Raises a ValueError naming X when rows hold values so large that the outputs overflow
        float64 (never NaN or inf predictions).
        """
        check_is_fitted(self)
        with np.errstate(over="ignore", invalid="ignore"):
            X = validate_data(self, X, dtype=np.float64, reset=False)
            outputs = self._in_output_units(self._forward(self.scaler_.transform(X)))
        finite = np.isfinite(outputs).reshape(outputs.shape[0], -1).all(axis=1)
        if not finite.all():
            rows = np.flatnonzero(~finite)
            raise ValueError(
                f"X holds values so large that the network's outputs overflow float64 in "
                f"{rows.size} row(s) (first: {rows[:5].tolist()}); clip or remove the extreme "
                "values of X (each feature is scaled by the median and interquartile range of "
                "the training data)."
            )
        return outputs


class SubquantileMLPRegressor(RegressorMixin, _BaseSubquantileMLP):
    r"""Two-layer network regression fitted on the rows it explains best (Subquantile descent).

    The network :math:`f(x) = \sum_{j=1}^m a_j \, \sigma(w_j^\top x + c_j) + b` is trained by
    gradient steps on the mean squared residual of the
    :math:`k = \lceil (1 - \varepsilon) n \rceil` rows of smallest residual, chosen anew at every
    step (the papers' Subquantile gradient with momentum or Nesterov acceleration); the other
    rows are reported as suspects. Inputs are scaled by their median and interquartile range,
    targets by their median and median absolute deviation, so corrupted values do not set the
    scale.

    Parameters
    ----------
    epsilon : float in [0, 0.5), default=0.2
        Fraction of the rows left out. For an estimate, wrap ``MLPRegressor`` in
        :class:`SubquantileRegressor` (``epsilon="auto"``).
    hidden_units : int, default=64
        Width m of the hidden layer.
    activation : {"tanh", "relu", "sigmoid", "softplus"}, default="tanh"
        The activation :math:`\sigma`.
    alpha : float, default=1e-4
        Ridge penalty on the weights of both layers (not the biases),
        :math:`\frac{\alpha}{2k} \bigl(\|W\|_F^2 + \|a\|^2\bigr)`.
    device : str or None, default=None
        A torch device ("cuda", "cpu"); None: the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the mini-batches.
    verbose : int, default=0
        Print the objective every 100 iterations when positive.
    solver : {"gd", "momentum", "nesterov", "adam"}, default="nesterov"
        The update: gradient descent, heavy ball, Nesterov (both with ``momentum``) or Adam.
    learning_rate : float, default=0.1
        Step size.
    momentum : float in [0, 1), default=0.9
        Momentum of "momentum" and "nesterov".
    max_iter : int, default=3000
        Most iterations (full-batch steps, or epochs with ``batch_size``).
    batch_size : int or None, default=None
        None: full-batch steps. An int: epochs of shuffled mini-batches.
    selection : {"batch", "refresh"}, default="refresh"
        With ``batch_size``: "refresh" chooses the k rows of smallest loss on the full data
        every ``refresh_every`` epochs and takes the mini-batches from them; "batch" keeps the
        subquantile of each mini-batch (noisier: a batch holds a random share of the corrupted
        rows; ``benchmarks/bench_networks.py`` measures both).
    refresh_every : int, default=1
        Epochs between the full-data selections of ``selection="refresh"``.
    smoothing : float or None, default=None
        Softplus-smoothed subquantile (see :func:`robustkernel.nn.subquantile_loss`).
    tol : float, default=1e-4
        Relative decrease of the full-data objective that counts as progress.
    n_iter_no_change : int, default=50
        Iterations without progress before stopping.

    Attributes
    ----------
    coefs_ : list of two ndarrays
        Weights of the hidden and the output layer, shapes (n_features, hidden_units) and
        (hidden_units, 1), on scaled inputs and targets (prediction needs no PyTorch).
    intercepts_ : list of two ndarrays
        Biases of the two layers.
    scaler_ : RobustScaler
        The input scaling: median and interquartile range (/ 1.349) of every feature; a
        feature with more than half of its values equal is scaled by the median of its
        nonzero deviations from the median instead.
    target_center_, target_scale_ : float
        The target scaling: median and 1.4826 x the median absolute deviation (of the nonzero
        deviations where more than half of the targets are equal; abs(y) for constant targets, 1
        for zeros).
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        True for the k rows of smallest squared residual under the trained network.
    outlier_scores_ : ndarray of shape (n_samples,)
        Squared residual of every training row; larger is more suspect (inf where the square
        overflows float64, for targets beyond ~1e154; ``inlier_mask_`` is chosen on the scaled
        residuals, exact whatever the targets' magnitude).
    threshold_ : float
        The k-th smallest squared residual.
    objective_history_ : ndarray of shape (``n_iter_``,)
        The full-data objective after every iteration (in squared target units).
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the objective stopped improving before ``max_iter``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when X has string column names.

    See Also
    --------
    SubquantileMLPClassifier : The same for labels.
    SubquantileRegressor : Subquantile minimization around any estimator.
    robustkernel.nn.subquantile_loss : The objective, for your own training loop.

    Notes
    -----
    The papers prove the guarantees of Subquantile minimization for two-layer networks
    :math:`f(x) = \sum_j a_j \, \sigma(w_j^\top x)`; this class trains that model (with
    biases). On the scaled inputs and targets, with :math:`\ell_i(f) = (f(x_i) - y_i)^2`,
    the rows :math:`w_j^\top` of :math:`W` and :math:`k = \lceil (1 - \varepsilon) n \rceil`,
    each step descends

    .. math::

        F(f) = \frac{1}{k} \sum_{i \in S(f)} \ell_i(f)
        + \frac{\alpha}{2k} \bigl(\|W\|_F^2 + \|a\|^2\bigr),

    with :math:`S(f)` the :math:`k` rows of smallest loss under the current network. The
    gradient of the subquantile is the mean gradient of the kept rows, so each step ignores the
    rows the network explains worst at that step.

    References
    ----------
    .. [1] A. Rathnashyam and A. Gittens, "Kernel Learning in the Huber epsilon-Contamination
       Model" (two-layer neural networks).

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel import SubquantileMLPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.tanh(X[:, 0] - X[:, 1]) + 0.05 * rng.normal(size=300)
    >>> y[:60] = rng.normal(5, 2, size=60)  # 20% of the targets wrong
    >>> model = SubquantileMLPRegressor(hidden_units=16, random_state=0).fit(X, y)
    >>> bool(model.inlier_mask_[:60].mean() < 0.1)
    True
    """

    def __init__(
        self,
        epsilon: float = 0.2,
        *,
        hidden_units: int = 64,
        activation: str = 'tanh',
        alpha: float = 0.0001,
        device: str | None = None,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        solver: str = 'nesterov',
        learning_rate: float = 0.1,
        momentum: float = 0.9,
        max_iter: int = 3000,
        batch_size: int | None = None,
        selection: str = 'refresh',
        refresh_every: int = 1,
        smoothing: float | None = None,
        tol: float = 0.0001,
        n_iter_no_change: int = 50,
    ) -> None:
        self.epsilon = epsilon
        self.hidden_units = hidden_units
        self.activation = activation
        self.alpha = alpha
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.solver = solver
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.selection = selection
        self.refresh_every = refresh_every
        self.smoothing = smoothing
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change

    def _encode(self, y: Any) -> np.ndarray:
        """(y - median) / spread in float64, refused when float32 cannot hold the result.

        The spread is 1.4826 x the median absolute deviation; where more than half of the
        targets are equal, 1.4826 x the median of the nonzero deviations (abs(y) when y is
        constant, 1 when it is 0), so that the scaling follows the targets' units (tiny targets
        are not flattened to zero by the float32 training, huge ones do not overflow).
        """
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"y must hold numbers for a regressor, got an array of dtype {y.dtype} that "
                "does not convert to float; for labels use SubquantileMLPClassifier."
            ) from error
        if not np.all(np.isfinite(y)):
            raise ValueError(
                "y holds NaN or infinite values (missing targets?); remove those rows."
            )
        center = _median(y)
        with np.errstate(over="ignore", invalid="ignore"):
            deviations = np.abs(y - center)
            scale = MAD_TO_SD * _median(deviations)
            if scale == 0.0:
                nonzero = deviations[deviations > 0.0]
                scale = MAD_TO_SD * _median(nonzero) if nonzero.size else abs(center) or 1.0
            targets = (y - center) / scale
        if not np.isfinite(scale):
            raise ValueError(
                f"y spans too wide a range for the network: its spread around the median "
                f"{center:.3g} (1.4826 x the median absolute deviation) overflows float64. "
                "Rescale y (e.g. divide it by a constant) or remove its extreme values."
            )
        if not np.all(np.abs(targets) <= FLOAT32_MAX):  # False for NaN too
            raise ValueError(
                f"y spans too wide a range for the network, which trains in float32: centred "
                f"on its median {center:.3g} and divided by its spread {scale:.3g} (1.4826 x "
                f"the median absolute deviation), |y| reaches "
                f"{_largest_magnitude(targets):.3g}, beyond float32's {FLOAT32_MAX:.3g}. "
                "Remove, clip or transform the extreme values of y."
            )
        self.target_center_ = center
        self.target_scale_ = scale
        return targets

    def _n_outputs(self) -> int:
        return 1

    def _row_losses(self, torch: Any, outputs: Any, targets: Any) -> Any:
        return (outputs[:, 0] - targets) ** 2

    def _numpy_losses(self, outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return (outputs[:, 0] - targets) ** 2

    def _loss_scale(self) -> float:
        with np.errstate(over="ignore", under="ignore"):  # targets beyond ~1e154: inf
            return float(np.float64(self.target_scale_) ** 2)

    def _in_output_units(self, outputs: np.ndarray) -> np.ndarray:
        return outputs[:, 0] * self.target_scale_ + self.target_center_

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The network's outputs in the units of the training targets.
        """
        return self._outputs(X)


class SubquantileMLPClassifier(ClassifierMixin, _BaseSubquantileMLP):
    r"""Two-layer network classification fitted on the rows it explains best.

    As :class:`SubquantileMLPRegressor`, with the cross-entropy of the observed label as the
    per-row loss (logistic for two classes, softmax for more): flipped labels are the rows the
    steps leave out.

    Parameters
    ----------
    epsilon : float in [0, 0.5), default=0.2
        Fraction of the rows left out.
    hidden_units : int, default=64
        Width m of the hidden layer.
    activation : {"tanh", "relu", "sigmoid", "softplus"}, default="tanh"
        The activation :math:`\sigma`.
    alpha : float, default=1e-4
        Ridge penalty on the weights of both layers (not the biases),
        :math:`\frac{\alpha}{2k} \bigl(\|W\|_F^2 + \|a\|^2\bigr)`.
    device : str or None, default=None
        A torch device; None: the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the mini-batches.
    verbose : int, default=0
        Print the objective every 100 iterations when positive.
    solver : {"gd", "momentum", "nesterov", "adam"}, default="nesterov"
        The update.
    learning_rate : float, default=0.1
        Step size.
    momentum : float in [0, 1), default=0.9
        Momentum of "momentum" and "nesterov".
    max_iter : int, default=3000
        Most iterations (full-batch steps, or epochs with ``batch_size``).
    batch_size : int or None, default=None
        None: full-batch steps. An int: epochs of shuffled mini-batches.
    selection : {"batch", "refresh"}, default="refresh"
        With ``batch_size``: the subquantile of each mini-batch, or of the full data every
        ``refresh_every`` epochs.
    refresh_every : int, default=1
        Epochs between the full-data selections of ``selection="refresh"``.
    smoothing : float or None, default=None
        Softplus-smoothed subquantile.
    tol : float, default=1e-4
        Relative decrease of the full-data objective that counts as progress.
    n_iter_no_change : int, default=50
        Iterations without progress before stopping.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coefs_ : list of two ndarrays
        Weights of the hidden and the output layer, shapes (n_features, hidden_units) and
        (hidden_units, n_outputs) (1 for two classes, else n_classes), on scaled inputs;
        outputs are logits (prediction needs no PyTorch).
    intercepts_ : list of two ndarrays
        Biases of the two layers.
    scaler_ : RobustScaler
        The input scaling, as :class:`SubquantileMLPRegressor`'s.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        True for the k rows of smallest cross-entropy under the trained network.
    outlier_scores_ : ndarray of shape (n_samples,)
        Cross-entropy -log p(observed label) of every training row.
    threshold_ : float
        The k-th smallest cross-entropy.
    objective_history_ : ndarray of shape (``n_iter_``,)
        The full-data objective after every iteration.
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the objective stopped improving before ``max_iter``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when X has string column names.

    See Also
    --------
    SubquantileMLPRegressor : The same for real targets.
    SubquantileClassifier : Subquantile minimization around any classifier.

    Notes
    -----
    With the network :math:`f(x) = \sum_{j=1}^m a_j \, \sigma(w_j^\top x + c_j) + b` (one output
    of logits per class, a single one for two classes), :math:`p_f(y \mid x)` its logistic or
    softmax probabilities, the loss :math:`\ell_i(f) = -\log p_f(y_i \mid x_i)` and
    :math:`k = \lceil (1 - \varepsilon) n \rceil`, each step descends

    .. math::

        F(f) = \frac{1}{k} \sum_{i \in S(f)} \ell_i(f)
        + \frac{\alpha}{2k} \bigl(\|W\|_F^2 + \|a\|^2\bigr),

    with :math:`S(f)` the :math:`k` rows of smallest loss under the current network: a flipped
    label has a large loss once the network fits the clean rows, and drops out of the steps.

    References
    ----------
    .. [1] A. Rathnashyam and A. Gittens, "Kernel Learning in the Huber epsilon-Contamination
       Model" (two-layer neural networks).

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel import SubquantileMLPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> model = SubquantileMLPClassifier(epsilon=0.1, random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    def __init__(
        self,
        epsilon: float = 0.2,
        *,
        hidden_units: int = 64,
        activation: str = 'tanh',
        alpha: float = 0.0001,
        device: str | None = None,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        solver: str = 'nesterov',
        learning_rate: float = 0.1,
        momentum: float = 0.9,
        max_iter: int = 3000,
        batch_size: int | None = None,
        selection: str = 'refresh',
        refresh_every: int = 1,
        smoothing: float | None = None,
        tol: float = 0.0001,
        n_iter_no_change: int = 50,
    ) -> None:
        self.epsilon = epsilon
        self.hidden_units = hidden_units
        self.activation = activation
        self.alpha = alpha
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.solver = solver
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.selection = selection
        self.refresh_every = refresh_every
        self.smoothing = smoothing
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change

    def _encode(self, y: Any) -> np.ndarray:
        classes, indices = class_labels(y, type(self).__name__)
        if classes.size < 2:
            raise ValueError("The labels hold one class; a classifier needs two or more.")
        self.classes_ = classes
        return indices

    def _n_outputs(self) -> int:
        return 1 if self.classes_.size == 2 else self.classes_.size

    def _row_losses(self, torch: Any, outputs: Any, targets: Any) -> Any:
        functional = torch.nn.functional
        if outputs.shape[1] == 1:
            return functional.binary_cross_entropy_with_logits(
                outputs[:, 0], targets.to(outputs.dtype), reduction="none"
            )
        return functional.cross_entropy(outputs, targets.long(), reduction="none")

    def _numpy_losses(self, outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
        if outputs.shape[1] == 1:
            z = outputs[:, 0]
            return np.logaddexp(0.0, z) - targets * z  # -log sigmoid(z) or -log(1 - sigmoid)
        log_proba = outputs - logsumexp(outputs, axis=1, keepdims=True)
        return -log_proba[np.arange(len(targets)), targets]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities, columns in the order of ``classes_``.
        """
        logits = self._outputs(X)
        if logits.shape[1] == 1:
            p = expit(logits[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(logits, axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
