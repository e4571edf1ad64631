"""Save and load fitted models, with the library version recorded and checked.

A model file holds ``{"format": ..., "version": ..., "model": ...}``. Loading a file written by
another version of robustkernel works but warns (:class:`ModelVersionWarning`): fitted
attributes may have changed meaning between versions.

Two formats, chosen by the file suffix:

* ``.skops`` (needs the optional extra, ``pip install robustkernel[skops]``): skops' safe
  format; loading refuses any type outside robustkernel and skops' trusted defaults (NumPy,
  SciPy, scikit-learn, Python built-ins), so a tampered file cannot run code.
* anything else: a joblib pickle. Like every pickle it can run code when loaded: load only files
  you trust.
"""

from __future__ import annotations

import os
import pickle
import warnings
import zipfile
from pathlib import Path
from typing import Any

import joblib

from . import __version__
from ._atomic import atomic_path

FORMAT = "robustkernel-model"
# What unpickling (or unzipping) a file that is not a model can raise.
UNREADABLE = (
    pickle.UnpicklingError,
    zipfile.BadZipFile,
    EOFError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    ImportError,
)


class ModelVersionWarning(UserWarning):
    """The model file was written by another version of robustkernel."""


def save_model(model: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` and the library version to ``path`` (joblib or skops), atomically.

    The file is written next to ``path`` under a temporary name and renamed at the end, so a
    failure never leaves a half-written file.

    Parameters
    ----------
    model : estimator
        A (usually fitted) estimator.
    path : str or path-like
        Destination file: ``*.skops`` for the skops format, otherwise joblib (``*.joblib``).

    Returns
    -------
    path : Path
        The file written.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from robustkernel import SubquantileKernelRegressor
    >>> from robustkernel.persistence import load_model, save_model
    >>> X, y = np.arange(20.0).reshape(10, 2), np.arange(10.0)
    >>> model = SubquantileKernelRegressor(epsilon=0.1).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     loaded = load_model(save_model(model, Path(folder) / "model.joblib"))
    >>> bool(np.array_equal(loaded.predict(X), model.predict(X)))
    True
    """
    path = Path(path)
    payload = {"format": FORMAT, "version": __version__, "model": model}
    with atomic_path(path) as temporary:
        if _is_skops(path):
            _skops_io().dump(payload, temporary)
        else:
            joblib.dump(payload, temporary)
    return path


def load_model(path: str | os.PathLike[str]) -> Any:
    """Read a model written by :func:`save_model`; warn if another version wrote it.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save_model`. A joblib file is unpickled: load only trusted
        files; a ``*.skops`` file is loaded safely.

    Returns
    -------
    model : estimator
        The stored estimator.

    Raises
    ------
    ValueError
        The file is not a robustkernel model file, or a skops file holds types from outside
        robustkernel.

    Warns
    -----
    ModelVersionWarning
        The file was written by another robustkernel version.
    """
    try:
        payload = _load_skops(Path(path)) if _is_skops(path) else joblib.load(path)
    except UNREADABLE as error:
        raise ValueError(f"{os.fspath(path)!r} is not a robustkernel model file.") from error
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a robustkernel model file.")
    if payload["version"] != __version__:
        warnings.warn(
            f"{os.fspath(path)!r} was saved by robustkernel {payload['version']}, this is "
            f"{__version__}; predictions may differ.",
            ModelVersionWarning,
            stacklevel=2,
        )
    return payload["model"]


def _is_skops(path: str | os.PathLike[str]) -> bool:
    return Path(path).suffix == ".skops"


def _skops_io() -> Any:
    try:
        import skops.io
    except ImportError as error:
        raise ImportError(
            "The .skops format needs skops: pip install 'robustkernel[skops]'."
        ) from error
    return skops.io


def _load_skops(path: Path) -> Any:
    """Load with skops, trusting only robustkernel's own classes besides skops' defaults."""
    skops_io = _skops_io()
    untrusted = skops_io.get_untrusted_types(file=path)
    foreign = [name for name in untrusted if not name.startswith("robustkernel.")]
    if foreign:
        raise ValueError(f"{os.fspath(path)!r} holds types from outside robustkernel: {foreign}.")
    return skops_io.load(path, trusted=untrusted)
