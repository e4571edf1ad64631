"""The one validation of a Subquantile fit: every parameter, against the input it fits.

scikit-learn's ``_parameter_constraints`` check each parameter alone (``_fit_context``);
:func:`validate_settings` then checks what depends on several parameters or on the input, and
returns the :class:`FitSettings` every backend reads. Nothing later re-validates, and no backend
reads the estimator's parameters directly.

Input kinds (:func:`input_kind`):

* ``"array"``: NumPy / SciPy sparse rows in memory, no weights (or weights of 0 and 1 only, the
  fit on the rows of weight 1): every option;
* ``"weighted"``: in memory with other row weights: the weighted subquantile;
* ``"dask"``: a ``dask.array`` fitted as passes over its chunks.

:data:`BACKEND_SUPPORT` is the allow-list of each kind: the parameters it restricts and the
values it takes. A value outside it raises ValueError naming the parameter, the value and the
input kind, so no option is ever ignored silently; a parameter missing from a kind's table is
supported with every value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Number
from typing import Any, Literal

import numpy as np

from ._automatic.hyperparameters import takes_gamma
from ._solve.solvers import SOLVERS, Solver, SolverOptions
from ._tasks import HINGE_LOSSES, Task, link_of

InputKind = Literal["array", "weighted", "dask"]
INPUT_NAMES: dict[str, str] = {
    "array": "in-memory data",
    "weighted": "sample_weight (the weighted subquantile)",
    "dask": "a Dask array",
}


@dataclass(frozen=True)
class Allowed:
    """The values of one parameter a backend supports: ``accepts(value, params, task)``, and
    what to tell the user (``values``)."""

    accepts: Callable[[Any, Mapping[str, Any], Task], bool]
    values: str


def _one_of(*choices: Any) -> Allowed:
    """Allowed values given by equality (strings, None, numbers, booleans)."""

    def accepts(value: Any, params: Mapping[str, Any], task: Task) -> bool:
        return any(_same(value, choice) for choice in choices)

    return Allowed(accepts, " or ".join(repr(choice) for choice in choices))


def _same(value: Any, choice: Any) -> bool:
    """``value == choice`` without numpy's elementwise or cross-type surprises."""
    if choice is None or isinstance(choice, bool):
        return value is choice or (isinstance(value, np.bool_) and bool(value) is choice)
    if isinstance(choice, str):
        return isinstance(value, str) and value == choice
    return isinstance(value, Number) and not isinstance(value, bool) and value == choice


def _dask_refine(value: Any, params: Mapping[str, Any], task: Task) -> bool:
    if value is None or _is_auto(value):  # "auto" rejects only where epsilon is "auto"
        return True
    # a classifier's rejection at a given epsilon needs out-of-fold fits (in memory only)
    return value == "reject" and (not task.classifier or _is_auto(params["epsilon"]))


BACKEND_SUPPORT: dict[str, dict[str, Allowed]] = {
    "array": {},
    "weighted": {
        "refine": _one_of("auto", None, "reject"),
        "solver": _one_of("alternating"),
        "device": _one_of(None),
    },
    "dask": {
        "refine": Allowed(
            _dask_refine, "'auto', None, or 'reject' (a classifier: only with epsilon='auto')"
        ),
        "n_components": Allowed(
            lambda value, params, task: value is not None,
            "an integer (the exact n x n model runs in memory only)",
        ),
        "approximation": _one_of("nystroem"),
        "kernel": Allowed(
            lambda value, params, task: not _same(value, "precomputed"),
            'a kernel computed from the rows (not "precomputed")',
        ),
        "solver": _one_of("alternating"),
        "init": _one_of("erm"),
        "n_init": _one_of(1),
        "radius": _one_of(None),
        "smoothing": _one_of(None),
        "line_search": _one_of(False),
        "device": _one_of(None),
        "link": _one_of("identity"),
        "loss": Allowed(
            lambda value, params, task: value in ("auto", "log", "squared_hinge"),
            "'auto', 'log' or 'squared_hinge' (libsvm's hinge fits in memory; 'auto' is the "
            "log loss on Dask)",
        ),
    },
}
"""Per input kind: the parameters it restricts and the values it supports."""


@dataclass(frozen=True, kw_only=True)
class FitSettings:
    """The validated parameters of one fit and what they resolve to.

    One field per parameter of the estimators' ``__init__`` (the regressor's ``link``, the
    classifier's ``loss``: None for the other; ``parameter_names`` says which the estimator
    has), with ``kernel`` resolved before any fit (:func:`_resolve_kernel`), ``refine``
    resolved (:func:`resolve_refine`: never "auto") and ``n_components`` resolved by the
    estimator; ``solver_spec`` is the registry entry of ``solver`` and ``options`` its options
    with ``max_iter`` resolved (the solver's default where None). A fit never changes its
    settings: :meth:`replace` returns new ones.
    """

    epsilon: float | str
    alpha: float | str
    kernel: str | Callable[..., Any]
    gamma: float | str | None
    degree: float
    coef0: float
    kernel_params: dict[str, Any] | None
    fit_intercept: bool
    refine: str | None
    n_components: int | str | None
    approximation: str
    dtype: str | type
    device: str | None
    random_state: Any
    verbose: int
    solver: str
    max_iter: int | None
    tol: float
    init: str | np.ndarray
    n_init: int
    init_size: int
    radius: float | None
    smoothing: float | None
    momentum: float
    line_search: bool
    n_iter_no_change: int
    link: Any = None
    loss: str | None = None
    parameter_names: tuple[str, ...]
    input_kind: InputKind
    estimator: str  # the estimator's class name, for messages
    solver_spec: Solver = field(repr=False)
    options: SolverOptions

    @classmethod
    def of(
        cls, params: Mapping[str, Any], input_kind: InputKind, estimator: str, solver: Solver
    ) -> FitSettings:
        """The settings of the validated parameters ``params`` (a TypeError names one this
        class has no field for)."""
        return cls(
            **params,
            parameter_names=tuple(params),
            input_kind=input_kind,
            estimator=estimator,
            solver_spec=solver,
            options=_solver_options(params, solver),
        )

    @property
    def params(self) -> dict[str, Any]:
        """The estimator's parameters, by name (those the task's encoders and checks read)."""
        return {name: getattr(self, name) for name in self.parameter_names}

    def is_auto(self, name: str) -> bool:
        """Whether the parameter ``name`` is "auto"."""
        return _is_auto(getattr(self, name))

    def replace(self, **params: Any) -> FitSettings:
        """These settings with some parameters changed (already valid: not re-checked)."""
        unknown = set(params) - set(self.parameter_names)
        if unknown:
            raise TypeError(f"{self.estimator} has no parameter {sorted(unknown)}")
        changed = {**self.params, **params}
        return dataclasses.replace(
            self, **params, options=_solver_options(changed, self.solver_spec)
        )


def _is_auto(value: Any) -> bool:
    return isinstance(value, str) and value == "auto"


def is_dask_array(X: Any) -> bool:
    """Whether X is a ``dask.array.Array`` (without importing Dask when it is not loaded)."""
    return type(X).__module__.startswith("dask.") and type(X).__name__ == "Array"


def input_kind(X: Any, sample_weight: np.ndarray | None) -> InputKind:
    """The kind of input of a fit (``sample_weight`` already validated, or None)."""
    if is_dask_array(X):
        return "dask"
    if sample_weight is None or np.all((sample_weight == 0.0) | (sample_weight == 1.0)):
        return "array"
    return "weighted"


def validate_settings(
    params: Mapping[str, Any], task: Task, kind: InputKind, estimator: str
) -> FitSettings:
    """Check every parameter against the input kind and the others; the settings of the fit.

    Raises
    ------
    ValueError
        Naming every unsupported parameter value of the input kind (with the values it
        takes), or the first rule between parameters that fails.
    """
    problems = unsupported(params, task, kind)
    if problems:
        raise ValueError(
            f"{estimator}.fit on {INPUT_NAMES[kind]} does not support " + "; ".join(problems)
            + "."
        )
    params = _resolve_kernel(params, task)
    solver = SOLVERS[params["solver"]]
    _check_combinations(params, task, solver, estimator)
    params = {**params, "refine": resolve_refine(params["refine"], params["epsilon"])}
    return FitSettings.of(params, kind, estimator, solver)


def resolve_refine(refine: str | None, epsilon: float | str) -> str | None:
    """What ``refine`` runs at ``epsilon``: "auto" is "reject" where epsilon is "auto" and
    nothing (None) at a given epsilon, which is then the fraction trimmed, in every fit of the
    fit (the trimmed fits that choose alpha / gamma "auto" too: the fit is that of
    refine=None); the other values as given.

    Parameters
    ----------
    refine : {"auto", "reject", "biweight"} or None
        The ``refine`` parameter (already validated).
    epsilon : float or "auto"
        The ``epsilon`` parameter.

    Returns
    -------
    str or None
        "reject", "biweight" or None.
    """
    if not _is_auto(refine):
        return refine
    return "reject" if _is_auto(epsilon) else None


def _resolve_kernel(params: Mapping[str, Any], task: Task) -> Mapping[str, Any]:
    """``params`` with the kernel a regression's kernel="auto" resolves to before any fit:
    approximation="rff" names the rbf kernel (random Fourier features exist for it only), so
    kernel="auto" with it is kernel="rbf", at any size (whether or not ``n_components``
    resolves to features); otherwise the parameters as given (a classifier's kernel="auto"
    is refused by the rules between parameters)."""
    if (
        _is_auto(params["kernel"])
        and not task.classifier
        and _same(params["approximation"], "rff")
    ):
        return {**params, "kernel": "rbf"}
    return params


def column_units(
    settings: FitSettings, task: Task
) -> Literal["spread", "standard deviation"] | None:
    """The units the fit works in (:mod:`.feature_scaling`): "spread" (each column's robust
    centre and spread) where the regressor chooses its kernel (kernel="auto"); "standard
    deviation" (each column divided by it) where a classifier chooses the kernel's width
    (gamma="auto" with a kernel that takes a gamma: rbf, polynomial, laplacian, sigmoid, chi2);
    None, the units given, elsewhere (a linear kernel, a given gamma). The width is searched on
    a grid around the columns' pooled spread, which one column in large units dominates: wine
    (178 rows, 13 columns, proline in the thousands) with 20% of the labels flipped gave
    ``gamma_`` 1.1e-5 and accuracy 0.62-0.67 in its own units, 0.97-1.00 after
    ``StandardScaler``. The regressor's kernel="rbf" keeps the units given (the previous
    defaults, which the benchmarks compare with)."""
    if _is_auto(settings.kernel):
        return "spread"
    if task.classifier and takes_gamma(settings.kernel) and settings.is_auto("gamma"):
        return "standard deviation"
    return None


def unsupported(params: Mapping[str, Any], task: Task, kind: InputKind) -> list[str]:
    """The parameter values the input kind does not support, each with the values it takes."""
    return [
        f"{name}={params[name]!r} ({name} must be {allowed.values})"
        for name, allowed in BACKEND_SUPPORT[kind].items()
        if name in params and not allowed.accepts(params[name], params, task)
    ]


def _solver_options(params: Mapping[str, Any], solver: Solver) -> SolverOptions:
    return SolverOptions(
        max_iter=params["max_iter"] if params["max_iter"] is not None else solver.max_iter,
        tol=params["tol"],
        n_iter_no_change=params["n_iter_no_change"],
        momentum=params["momentum"],
        smoothing=params["smoothing"],
        line_search=params["line_search"],
    )


AUTOMATIC_KERNEL_DEFAULTS: dict[str, Any] = {
    "solver": "alternating",
    "init": "erm",
    "n_init": 1,
    "radius": None,
    "smoothing": None,
    "line_search": False,
    "refine": "auto",
}
"""The solvers' options kernel="auto" takes at their defaults only (it runs no solver; its
reweighting does what refine would with epsilon="auto", and a given epsilon is the fraction it
trims: refine=None, the same fit, is taken too; "reject" and "biweight" are refused)."""


def _check_automatic_kernel(params: Mapping[str, Any], task: Task, estimator: str) -> None:
    """kernel="auto" (the high-breakdown start and the kernel choice) is for a regression, with
    no solver options (``device=`` is refused before, with the papers' estimator's rule)."""
    if task.classifier:
        raise ValueError(
            f'kernel="auto" is for regression; give {estimator} a kernel (e.g. kernel="rbf").'
        )
    solver_options = {
        name: params[name]
        for name, default in AUTOMATIC_KERNEL_DEFAULTS.items()
        if not _same(params[name], default) and not (name == "refine" and params[name] is None)
    }
    if solver_options:
        given = ", ".join(f"{name}={value!r}" for name, value in solver_options.items())
        refine = (
            ' (the rows its reweighting keeps with epsilon="auto", a given epsilon trimmed '
            'exactly: refine="auto" or None)'
            if "refine" in solver_options
            else ""
        )
        raise ValueError(
            f'kernel="auto" fits kernel ridge on the rows its high-breakdown start keeps, '
            f"with no solver{refine}: {given} would be ignored. Give a kernel (the papers' "
            'estimator: kernel="rbf") to use the solvers and their options.'
        )


def _check_combinations(
    params: Mapping[str, Any], task: Task, solver: Solver, estimator: str
) -> None:
    """The rules between parameters, whatever the input."""
    name = params["solver"]
    if params["smoothing"] is not None and not solver.smoothing:
        raise ValueError(
            f"smoothing applies to the gradient solvers ('gd', 'momentum', 'nesterov'); the "
            f"{name!r} solver uses the hard subquantile."
        )
    if params["line_search"] and not solver.line_search:
        raise ValueError(f"line_search=True is only available with solver='gd', got {name!r}.")
    refine = params["refine"]
    if refine is not None and not _is_auto(refine) and refine not in task.refinements:
        raise ValueError(
            f"refine={refine!r} is not available for {estimator}; choose from "
            f"{sorted(task.refinements) or 'none'}, 'auto' or None."
        )
    if refine == "biweight" and (params["radius"] is not None or params["device"] is not None):
        raise ValueError(
            'refine="biweight" runs on the CPU without the norm-ball constraint: it is not '
            "available with radius or device."
        )
    if "link" in params and link_of(params["link"]).name != "identity" and refine == "biweight":
        raise ValueError('refine="biweight" is for the identity link only.')
    if params["device"] is not None:
        automatic = {
            key: params[key]
            for key in ("kernel", "epsilon", "alpha", "gamma", "refine")
            if (key == "refine" and params[key] not in (None, "auto"))
            or (key != "refine" and _is_auto(params[key]))
        }
        if params["n_components"] is not None or automatic:
            raise ValueError(
                "device= runs the papers' estimator on the exact kernel model: give kernel "
                '(e.g. kernel="rbf"), epsilon (a number), alpha and gamma, and refine=None or '
                '"auto" (the default: nothing at a given epsilon), without n_components '
                f"(got {automatic or {'n_components': params['n_components']}}); use "
                "device=None for the automatic configuration."
            )
    if _is_auto(params["kernel"]):
        _check_automatic_kernel(params, task, estimator)
    if params.get("loss") in HINGE_LOSSES:
        _check_hinge(params)


def _check_hinge(params: Mapping[str, Any]) -> None:
    """The hinge losses fit by libsvm (hinge) or L-BFGS (squared hinge) on the
    kept rows: the alternating solver, on the CPU, without the norm ball; libsvm always fits
    an intercept."""
    loss = params["loss"]
    refused = {
        name: params[name]
        for name, supported in (
            ("solver", params["solver"] == "alternating"),
            ("device", params["device"] is None),
            ("radius", params["radius"] is None),
            ("fit_intercept", params["fit_intercept"] or loss == "squared_hinge"),
        )
        if not supported
    }
    if refused:
        given = ", ".join(f"{name}={value!r}" for name, value in refused.items())
        raise ValueError(
            f"loss={loss!r} fits a support vector machine per pair of classes on the kept "
            "rows with the 'alternating' solver, on the CPU, without radius"
            + (" and with fit_intercept=True (libsvm's intercept)" if loss == "hinge" else "")
            + f": {given} is not available with it. Use loss='log' for the papers' solvers "
            "and options."
        )
