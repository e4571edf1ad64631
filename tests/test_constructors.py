"""Every public estimator writes its own ``__init__``, as scikit-learn's estimators do: a reader,
an IDE and a type checker see its signature in the class, with no ``*args`` / ``**kwargs`` and
no signature made at run time; the papers' solver knobs come after the parameters a user sets."""

from __future__ import annotations

import inspect
import re

import pytest
from sklearn.base import BaseEstimator

import robustkernel
import robustkernel.baselines


def public_estimators() -> list[type]:
    """The estimator classes of the package's and the baselines' ``__all__``."""
    classes = []
    for module in (robustkernel, robustkernel.baselines):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
                classes.append(obj)
    return classes


def written_in_class(cls: type) -> list[str]:
    """What is wrong with ``cls.__init__`` (nothing: an empty list)."""
    problems = []
    init = vars(cls).get("__init__")
    if init is None:
        return [f"{cls.__name__} inherits its __init__"]
    if hasattr(init, "__signature__"):
        problems.append("its signature is made at run time (__signature__)")
    if init.__qualname__ != f"{cls.__name__}.__init__":
        problems.append(f"its __init__ is {init.__qualname__}")
    if not re.search(r"^    def __init__\(", inspect.getsource(cls), flags=re.M):
        problems.append("no `def __init__(` in the class's source")
    if init.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        problems.append("*args or **kwargs")  # read from the code: __signature__ can hide them
    return problems


def test_every_public_estimator_is_listed():
    names = {cls.__name__ for cls in public_estimators()}
    assert {
        "SubquantileKernelRegressor", "SubquantileKernelClassifier", "SubquantileRegressor",
        "SubquantileClassifier", "SubquantileMLPRegressor", "SubquantileMLPClassifier",
        "MetricKernelRidge", "MetricKernelLogisticRegression", "MetricKernelRidgeCV",
        "TiltedKernelRegressor", "SeverKernelClassifier", "OracleERM",
    } <= names


@pytest.mark.parametrize("cls", public_estimators(), ids=lambda cls: cls.__name__)
def test_init_is_written_in_the_class(cls):
    assert written_in_class(cls) == []
    # scikit-learn's rule: every parameter stored, unchanged, under its own name
    parameters = inspect.signature(cls).parameters
    given = {name: object() for name in parameters}  # a value no default equals
    estimator = cls(**given)
    assert all(getattr(estimator, name) is value for name, value in given.items())


def test_the_check_finds_inherited_and_generated_inits():
    class Base(BaseEstimator):
        def __init__(self, a=1):
            self.a = a

    class Inherits(Base):
        pass

    def generated(self, *args, **kwargs):
        Base.__init__(self, *args, **kwargs)

    generated.__signature__ = inspect.signature(Base.__init__)

    class Generated(Base):
        __init__ = generated

    assert written_in_class(Inherits) == ["Inherits inherits its __init__"]
    assert len(written_in_class(Generated)) == 4


SOLVER_KNOBS = {
    robustkernel.SubquantileKernelRegressor: [
        "solver", "max_iter", "tol", "init", "n_init", "init_size", "radius", "smoothing",
        "momentum", "line_search", "n_iter_no_change",
    ],
    robustkernel.SubquantileMLPRegressor: [
        "solver", "learning_rate", "momentum", "max_iter", "batch_size", "selection",
        "refresh_every", "smoothing", "tol", "n_iter_no_change",
    ],
    robustkernel.MetricKernelRidge: [
        "solver", "lr", "armijo_c", "beta", "tol", "max_iter", "init", "op_norm_bound",
        "batch_size",
    ],
}
SOLVER_KNOBS[robustkernel.SubquantileKernelClassifier] = SOLVER_KNOBS[
    robustkernel.SubquantileKernelRegressor
]
SOLVER_KNOBS[robustkernel.SubquantileMLPClassifier] = SOLVER_KNOBS[
    robustkernel.SubquantileMLPRegressor
]
SOLVER_KNOBS[robustkernel.MetricKernelLogisticRegression] = SOLVER_KNOBS[
    robustkernel.MetricKernelRidge
]


@pytest.mark.parametrize("cls", list(SOLVER_KNOBS), ids=lambda cls: cls.__name__)
def test_the_solver_knobs_come_last(cls):
    names = list(inspect.signature(cls).parameters)
    knobs = SOLVER_KNOBS[cls]
    assert names[-len(knobs):] == knobs, names
