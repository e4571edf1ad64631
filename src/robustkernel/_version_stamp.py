"""The library version in the pickled state of every estimator, as scikit-learn stamps its own.

:func:`robustkernel.persistence.load_model` checks the version its files record; an estimator
pickled with plain ``pickle`` or ``joblib.dump`` carries it too, and unpickling it under another
version warns (:class:`robustkernel.persistence.ModelVersionWarning`). The version and the
warning come from the leaf module :mod:`robustkernel._version`.
"""

from __future__ import annotations

import warnings
from typing import Any

from ._version import ModelVersionWarning, __version__

STATE_KEY = "_robustkernel_version"
UNKNOWN = "unknown (before the version stamp)"


class VersionStamped:
    """Mixin placed before ``BaseEstimator``: adds and checks ``STATE_KEY`` in the state."""

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), STATE_KEY: __version__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        version = state.pop(STATE_KEY, UNKNOWN)
        if version != __version__:
            warnings.warn(
                f"This {type(self).__name__} was pickled by robustkernel {version} and is "
                f"loaded by {__version__}; predictions may differ.",
                ModelVersionWarning,
                stacklevel=2,
            )
        super().__setstate__(state)
