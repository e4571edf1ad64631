"""The estimator plumbing shared by every kernel model of the library.

A kernel model is f(x) = sum_j w_j k(x_j, x) + b with the kernel arguments of scikit-learn's
KernelRidge (alpha, kernel, gamma, degree, coef0, kernel_params) and an optional unpenalized
intercept. :class:`KernelModel` validates the training data, encodes the target (a real column per
output for regression; a {0, 1} column for two classes, one-hot rows for more) together with its
loss, stores the dual coefficients and predicts f(X). :class:`KernelRegressorMixin` and
:class:`LogitClassifierMixin` turn f(X) into predictions. The SubQ estimators
(:mod:`robustkernel.subquantile`) and the baselines (:mod:`robustkernel.baselines`) build on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, is_classifier
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._memory import check_fit_memory, row_chunks
from .._version_stamp import VersionStamped
from .kernels import KERNELS, check_finite, compute_kernel, kernel_params
from .losses import (
    BinaryLogLoss,
    Loss,
    SoftmaxLoss,
    SquaredLoss,
    class_probabilities,
    predicted_classes,
)
from .pairwise import PairwisePlatt

KERNEL_CONSTRAINTS: dict[str, list[Any]] = {
    "alpha": [Interval(Real, 0.0, None, closed="neither")],
    "kernel": [StrOptions(set(KERNELS)), callable],
    "gamma": [Interval(Real, 0.0, None, closed="left"), None],
    "degree": [Interval(Real, 0.0, None, closed="left")],
    "coef0": [Real],
    "kernel_params": [dict, None],
    "fit_intercept": ["boolean"],
}


@dataclass(frozen=True)
class EncodedTarget:
    """Targets as an (n_samples, n_outputs) float array ``Y`` with the loss that fits them,
    the class labels (classifiers; None for regression) and whether predictions are 1-D."""

    Y: np.ndarray
    loss: Loss
    classes: np.ndarray | None
    single_output: bool


def single_class_error(
    estimator: str, label: Any, where: str = "the data contains"
) -> ValueError:
    """The error of a classifier fitted on one class (``where``: which rows hold only it)."""
    label = label.item() if isinstance(label, np.generic) else label
    return ValueError(
        f"{estimator} needs samples of at least 2 classes; {where} only one class: {label!r}."
    )


def class_labels(y: Any, estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """The sorted classes of the labels ``y`` and each row's class index.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (a column vector is taken with scikit-learn's warning).
    estimator : str
        The estimator's name, for the errors.

    Returns
    -------
    classes : ndarray
        The distinct labels, sorted.
    indices : ndarray of int, shape (n_samples,)
        The position of each row's label in ``classes``.

    Raises
    ------
    ValueError
        Continuous targets (scikit-learn's message), or labels of types that do not sort
        together (1 and "a"): NumPy's raw "'<' not supported" TypeError would not say which
        argument is at fault.
    """
    y = column_or_1d(y, warn=True)
    try:  # before scikit-learn's check, which calls such labels "unknown" and continuous
        classes, indices = np.unique(y, return_inverse=True)
    except TypeError:
        types = sorted({type(label).__name__ for label in y.tolist()})
        raise ValueError(
            f"{estimator}: the labels y mix types that cannot be ordered ({', '.join(types)}); "
            "give every label the same type, e.g. y.astype(str)."
        ) from None
    check_classification_targets(y)
    return classes, indices.ravel()


def encode_target(y: np.ndarray, classifier: bool, estimator: str) -> EncodedTarget:
    """Encode validated targets ``y`` for a kernel model (``estimator`` names it in errors).

    Regression: one column per target, squared loss. Classification: two classes as a {0, 1}
    column (binary cross-entropy on logits), more as one-hot rows (softmax cross-entropy); a
    single class is a ValueError.
    """
    if not classifier:
        Y = np.asarray(y, dtype=float).reshape(y.shape[0], -1)
        return EncodedTarget(Y, SquaredLoss(), None, y.ndim == 1)
    classes, encoded = class_labels(y, estimator)
    if classes.size < 2:
        raise single_class_error(estimator, classes[0])
    if classes.size == 2:
        return EncodedTarget(encoded.astype(float)[:, None], BinaryLogLoss(), classes, True)
    return EncodedTarget(np.eye(classes.size)[encoded], SoftmaxLoss(), classes, False)


class KernelModel(VersionStamped, BaseEstimator):
    """Base of the kernel estimators: validation, target encoding, the kernel, prediction.

    Subclasses write their own ``__init__`` (scikit-learn reads the parameters from its
    signature) with at least the keys of :data:`KERNEL_CONSTRAINTS`, and call
    :meth:`_validate_training_data` and :meth:`_encode_target` in ``fit``, and
    :meth:`_check_fit_memory` before an exact fit allocates its n x n kernel matrix.
    ``_fit_memory_matrices`` is the peak number of n x n float64 matrices the subclass's exact
    fit holds at once (measured with tracemalloc, rounded up), ``_memory_remedy`` what the
    message of a fit too large for the memory suggests instead.
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = dict(KERNEL_CONSTRAINTS)
    _single_output: bool
    # SubQ: K, the Cholesky factor of K + alpha I and, during a direct refit on the kept rows
    # or the leverages of epsilon="auto", a shifted kept-row block, its factor and its inverse.
    _fit_memory_matrices: ClassVar[float] = 6
    _memory_remedy: ClassVar[str] = (
        "pass n_components= (e.g. n_components=1000; --n-components on the command line) to "
        "fit the approximate kernel model in O(n m) memory"
    )
    # Sparse X (converted to CSR) for the estimators whose every use of X goes through the
    # kernel or the feature map, which take sparse rows as KernelRidge's do.
    _accepts_sparse: ClassVar[bool] = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = self._sparse_input()
        return tags

    def _sparse_input(self) -> bool:
        """Whether X may be sparse: not a precomputed kernel, not on a torch device."""
        return (
            self._accepts_sparse
            and self.kernel != "precomputed"
            and getattr(self, "device", None) is None
        )

    def _validated_X(self, X: Any, **kwargs: Any) -> Any:
        """``validate_data`` with sparse rows accepted (as CSR) where the estimator allows."""
        accept_sparse = "csr" if self._sparse_input() else False
        return validate_data(self, X, accept_sparse=accept_sparse, **kwargs)

    def _kernel(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        """The kernel matrix k(X, Y) (k(X, X) for Y=None) of this estimator's kernel."""
        return compute_kernel(X, Y, self._fitted_kernel(), self._kernel_parameters())

    def _fitted_kernel(self) -> Any:
        """The kernel of the fitted model (``kernel_``: kernel="auto" resolved), else as given."""
        return getattr(self, "kernel_", self.kernel)

    def _kernel_parameters(self) -> dict[str, Any]:
        # gamma_ / degree_ / coef0_: what a fit chose (gamma="auto", kernel="auto"), else as
        # given.
        gamma = getattr(self, "gamma_", self.gamma)
        degree = getattr(self, "degree_", self.degree)
        coef0 = getattr(self, "coef0_", self.coef0)
        return kernel_params(self._fitted_kernel(), gamma, degree, coef0, self.kernel_params)

    def _check_fit_memory(self, n_samples: int, n_matrices: float | None = None) -> None:
        """Refuse an exact fit whose n x n matrices (``n_matrices`` of them, the estimator's
        ``_fit_memory_matrices`` where None) would not fit in the available memory."""
        if n_matrices is None:
            n_matrices = self._fit_memory_matrices
        check_fit_memory(type(self).__name__, n_samples, n_matrices, self._memory_remedy)

    def _validate_training_data(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """scikit-learn's validation, plus the square-matrix rule of a precomputed kernel and
        (classifiers) labels that sort (:func:`class_labels`)."""
        X, y = self._validated_X(
            X,
            y=y,
            multi_output=self.__sklearn_tags__().target_tags.multi_output,
            y_numeric=not is_classifier(self),
        )
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(
                f'kernel="precomputed" needs a square n x n kernel matrix at fit, got {X.shape}.'
            )
        if is_classifier(self):
            class_labels(y, type(self).__name__)
        return X, y

    def _encode_target(self, y: np.ndarray) -> tuple[np.ndarray, Loss]:
        """The targets as an (n_samples, n_outputs) float array, and the loss that fits them
        (:func:`encode_target`); sets ``classes_`` (classifiers) and the output shape."""
        target = encode_target(y, is_classifier(self), type(self).__name__)
        if target.classes is not None:
            self.classes_ = target.classes
        self._single_output = target.single_output
        return target.Y, target.loss

    def _output_shapes(self, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float | np.ndarray]:
        """Coefficients (n, C) and intercept (C,) as stored: 1-D and a float for one output."""
        w = np.asarray(w, dtype=float).reshape(w.shape[0], -1)
        b = np.atleast_1d(np.asarray(b, dtype=float))
        if w.shape[1] == 1 and self._single_output:
            return w.ravel(), float(b[0])
        return w, b

    def _set_dual_model(self, X: np.ndarray, w: np.ndarray, b: np.ndarray) -> None:
        """Store the exact kernel model: ``X_fit_``, ``dual_coef_`` and ``intercept_``."""
        self.X_fit_ = X
        self.dual_coef_, self.intercept_ = self._output_shapes(w, b)

    def _decision(self, X: Any) -> np.ndarray:
        """Model outputs f(X), shape (n_samples, n_outputs).

        K(X, X_fit_) @ dual_coef_ + intercept_, one block of rows of X at a time (a block of
        the kernel matrix holds about ``robustkernel._memory.CHUNK_ELEMENTS`` entries), so
        memory stays bounded whatever the number of rows; a block with NaN or infinity (a
        callable kernel, an overflowing one) raises ValueError.
        """
        check_is_fitted(self)
        X = self._validated_X(X, reset=False)
        n_train = self.X_fit_.shape[0]
        w = self.dual_coef_.reshape(n_train, -1)
        out = np.empty((X.shape[0], w.shape[1]))
        for rows in row_chunks(X.shape[0], n_train):
            block = self._kernel(X[rows], self.X_fit_)
            check_finite(block)
            np.matmul(block, w, out=out[rows])
        out += np.atleast_1d(self.intercept_)
        return out


class KernelRegressorMixin(RegressorMixin):
    """``predict`` of a kernel regressor: f(X), 1-D for a single target."""

    _single_output: bool

    def predict(self, X: Any) -> np.ndarray:
        """Predict targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, or the n_samples x n_train kernel matrix for kernel="precomputed".

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictions.
        """
        F = self._response(self._decision(X))
        return F.ravel() if self._single_output else F

    def _response(self, F: np.ndarray) -> np.ndarray:
        """Predictions from the model outputs F: F itself (a link model applies its link)."""
        return F


class LogitClassifierMixin:
    """``decision_function``, ``predict_proba`` and ``predict`` from the model's outputs.

    The host class provides ``classes_`` and ``_decision(X)``: the logits, of shape
    (n_samples, 1) for two classes (binary cross-entropy) or (n_samples, n_classes) for more
    (softmax cross-entropy); or, where ``_pairwise_calibration()`` returns Platt's sigmoids
    (the hinge losses), one output per pair of classes (:mod:`.pairwise`), read through the
    calibrated probabilities as scikit-learn's ``SVC(probability=True)`` reads them, but with
    one answer: ``predict``, ``predict_proba`` and ``decision_function`` always agree on the
    class (SVC's ``predict`` counts votes and can disagree with its ``predict_proba``).
    """

    classes_: np.ndarray

    def _pairwise_calibration(self) -> PairwisePlatt | None:
        """Platt's sigmoids of a one-vs-one model's pairs; None for a logit model."""
        return None

    def decision_function(self, X: Any) -> np.ndarray:
        """Compute the logits f(x); for the hinge losses, the calibrated ones (below).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, or the n_samples x n_train kernel matrix for kernel="precomputed".

        Returns
        -------
        scores : ndarray
            Shape (n_samples,) for two classes, positive values favouring ``classes_[1]``;
            (n_samples, n_classes) otherwise. For the hinge losses: -(A f + B), Platt's
            logit of the SVM's output f (two classes), or the logarithms of the coupled
            probabilities (more), so that the largest score is always the class ``predict``
            and ``predict_proba`` name. The SVMs' own outputs, one per pair of classes, are
            ``_decision(X)``.
        """
        calibration = self._pairwise_calibration()
        F = self._decision(X)
        if calibration is not None:
            if F.shape[1] == 1:
                return -(F.ravel() * calibration.A[0] + calibration.B[0])
            return np.log(np.maximum(calibration.probabilities(F), np.finfo(float).tiny))
        return F.ravel() if F.shape[1] == 1 else F

    def predict_proba(self, X: Any) -> np.ndarray:
        """Compute the class probabilities.

        The sigmoid or softmax of the logits, or for the hinge losses Platt's sigmoid of
        every pair's SVM output (fitted out of fold), the pairs coupled.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``.
        """
        calibration = self._pairwise_calibration()
        F = self._decision(X)
        return class_probabilities(F) if calibration is None else calibration.probabilities(F)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class (the largest ``decision_function``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Predicted class labels.
        """
        if self._pairwise_calibration() is None:
            classes = predicted_classes(self._decision(X))
        else:
            classes = np.argmax(self.predict_proba(X), axis=1)
        return self.classes_[classes]
