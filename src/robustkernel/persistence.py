"""Save and load fitted models, with the library version recorded and checked.

A model file holds ``{"format": ..., "version": ..., "model": ...}``. Loading a file written by
another version of robustkernel works but warns (:class:`ModelVersionWarning`): fitted
attributes may have changed meaning between versions.

Two formats, chosen by the file suffix:

* ``.skops`` (needs the optional extra, ``pip install robustkernel[skops]``): skops' safe
  format. Before anything in the file is built, loading checks every type it names: besides
  skops' trusted defaults (NumPy, SciPy, scikit-learn estimators, Python built-ins) only the
  classes of :data:`SKOPS_TRUSTED_TYPES` (the library's estimators, the feature maps they hold,
  and the scikit-learn internals of the default inner estimators) are accepted; any other type,
  another ``robustkernel.*`` name included, makes :func:`load_model` raise ValueError. A
  tampered file cannot run code. :func:`save_model` applies the same check to what it is about
  to write: a model that :func:`load_model` would refuse (e.g. a meta-estimator around a random
  forest, whose trees skops does not trust) is not written, and the error names the types.
* anything else: a joblib pickle. **Unsafe**: like every pickle it can run arbitrary code when
  loaded; load only files you made yourself. The command line loads a pickle only with
  ``robustkernel predict --trust-pickle``.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import warnings
import zipfile
from pathlib import Path
from typing import Any

import joblib

from ._atomic import atomic_path
from ._version import ModelVersionWarning, __version__

FORMAT = "robustkernel-model"
SKOPS_SUFFIX = ".skops"
# The only types besides skops' trusted defaults that a .skops model file may name: the
# estimators of robustkernel and robustkernel.baselines, and the classes fitted estimators hold
# as attributes (PrecomputedNystroem: the feature map of kernel="precomputed" with n_components).
# Derived by fitting every estimator in each configuration (exact, n_components with Nystroem /
# random Fourier features / precomputed kernel, binary and multiclass classifiers,
# epsilon="auto", every solver), bare and inside the Pipeline(RobustScaler(), ...) of
# ``robustkernel fit`` or the TransformedTargetRegressor of ``learn-metric``, and collecting
# skops.io.get_untrusted_types of each dump; no NumPy or scikit-learn type beyond skops'
# defaults was needed, except by the meta-estimators' default inner estimators (histogram
# gradient boosting holds its trees as TreePredictor objects: skops builds one with
# ``TreePredictor.__new__`` and sets its arrays as attributes, calling nothing with data from
# the file), and by the Gaussian process of MetricKernelRidgeCV(predictor="gaussian_process")
# (its kernel objects, built the same way). The meta-estimators hold the user's estimator: any
# other type it needs beyond skops' defaults (e.g. sklearn.tree._tree.Tree of a random forest)
# is refused by name, by save_model before it writes anything, and such a model is saved as
# .joblib.
# tests/test_faults_security.py and tests/test_faults_meta.py round-trip every configuration
# and every public estimator with its defaults, so a class missing here fails a test. Never add
# a function, a module or a prefix: skops calls trusted names with arguments taken from the
# file.
SKOPS_TRUSTED_TYPES: frozenset[str] = frozenset(
    {
        "robustkernel.baselines._crr.CRRKernelRegressor",
        "robustkernel.baselines._oracle.OracleERM",
        "robustkernel.baselines._sever.SeverKernelClassifier",
        "robustkernel.baselines._sever.SeverKernelRegressor",
        "robustkernel.baselines._stir.STIRKernelRegressor",
        "robustkernel.baselines._term.TiltedKernelClassifier",
        "robustkernel.baselines._term.TiltedKernelRegressor",
        "robustkernel.baselines._torrent.TorrentGDKernelRegressor",
        "robustkernel.meta._estimators.SubquantileClassifier",
        "robustkernel.meta._estimators.SubquantileRegressor",
        "robustkernel.metric_kernel_ridge._classifier.MetricKernelLogisticRegression",
        "robustkernel.nn._mlp.SubquantileMLPClassifier",
        "robustkernel.nn._mlp.SubquantileMLPRegressor",
        "robustkernel.metric_kernel_ridge._cv.MetricKernelRidgeCV",
        "robustkernel.metric_kernel_ridge._estimator.MetricKernelRidge",
        "robustkernel.subquantile._estimators.classifier.SubquantileKernelClassifier",
        "robustkernel.subquantile._estimators.regressor.SubquantileKernelRegressor",
        "robustkernel.subquantile._solve.features.PrecomputedNystroem",
        # HistGradientBoostingRegressor / Classifier, the meta-estimators' default estimators
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        # the kernel of MetricKernelRidgeCV(predictor="gaussian_process")'s final model (classes
        # whose state is their hyper-parameters; skops sets it without calling them)
        "sklearn.gaussian_process.kernels.ConstantKernel",
        "sklearn.gaussian_process.kernels.Product",
        "sklearn.gaussian_process.kernels.RBF",
        "sklearn.gaussian_process.kernels.Sum",
        "sklearn.gaussian_process.kernels.WhiteKernel",
    }
)
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

    Raises
    ------
    ValueError
        A ``*.skops`` path and a model that names types :func:`load_model` refuses (outside
        skops' defaults and ``robustkernel.persistence.SKOPS_TRUSTED_TYPES``; the message lists
        them): nothing is
        written. Save such a model as ``*.joblib``.
    ImportError
        A ``*.skops`` path and skops is not installed.

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
    if _is_skops(path):
        skops_io = _skops_io()
        data = skops_io.dumps(payload)
        refused = _refused_types(skops_io.get_untrusted_types(data=data))
        if refused:
            raise ValueError(
                f"{os.fspath(path)!r} not written: the model holds types that load_model does "
                f"not trust in a .skops file, so it could not be loaded: {refused}. Save it as "
                ".joblib instead (a pickle: load only files you made yourself)."
            )
        with atomic_path(path) as temporary:
            temporary.write_bytes(data)
        return path
    with atomic_path(path) as temporary:
        joblib.dump(payload, temporary)
    return path


def load_model(path: str | os.PathLike[str]) -> Any:
    """Read a model written by ``save_model``; warn if another version wrote it.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save_model`. A ``*.skops`` file is loaded safely: its types are
        checked against skops' defaults and ``SKOPS_TRUSTED_TYPES`` before anything is
        built. Any other file is unpickled with joblib, which is **unsafe**: a crafted pickle
        runs arbitrary code when loaded, so load only files you made yourself.

    Returns
    -------
    model : estimator
        The stored estimator.

    Raises
    ------
    ValueError
        The file is not a robustkernel model file, or a skops file names a type outside skops'
        defaults and ``SKOPS_TRUSTED_TYPES`` (the message lists the refused types).
    ImportError
        A ``*.skops`` file and skops is not installed.

    Warns
    -----
    ModelVersionWarning
        The file was written by another robustkernel version.

    See Also
    --------
    save_model : Write the file.

    Examples
    --------
    A ``*.skops`` file (the optional skops extra) is loaded without unpickling:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from robustkernel import SubquantileKernelRegressor
    >>> from robustkernel.persistence import load_model, save_model
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2))
    >>> y = X[:, 0] + 0.1 * rng.normal(size=50)
    >>> model = SubquantileKernelRegressor(epsilon=0.1).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = save_model(model, Path(folder) / "model.skops")
    ...     loaded = load_model(path)
    >>> type(loaded).__name__
    'SubquantileKernelRegressor'
    >>> bool(np.array_equal(loaded.predict(X), model.predict(X)))
    True
    """
    try:
        with warnings.catch_warnings():
            # The estimators' own version stamp (``_version_stamp``) would say the same again.
            warnings.simplefilter("ignore", ModelVersionWarning)
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
    return Path(path).suffix == SKOPS_SUFFIX


def skops_available() -> bool:
    """Whether skops (the optional extra ``robustkernel[skops]``) can be imported.

    Returns
    -------
    available : bool
        True when ``*.skops`` files can be written and loaded.
    """
    # found, not imported: importing skops.io takes seconds, and the command line asks this
    # before it reads its input
    return importlib.util.find_spec("skops") is not None


def _skops_io() -> Any:
    try:
        import skops.io
    except ImportError as error:
        raise ImportError(
            "The .skops format needs skops: pip install 'robustkernel[skops]'."
        ) from error
    return skops.io


def _refused_types(untrusted: list[str]) -> list[str]:
    """The types of ``untrusted`` (skops' ``get_untrusted_types``) outside the allow-list."""
    return sorted(set(untrusted) - SKOPS_TRUSTED_TYPES)


def _load_skops(path: Path) -> Any:
    """Load with skops, after refusing every type outside its defaults and the allow-list."""
    skops_io = _skops_io()
    untrusted = skops_io.get_untrusted_types(file=path)
    refused = _refused_types(untrusted)
    if refused:
        raise ValueError(
            f"{os.fspath(path)!r} names types that a robustkernel model does not contain; "
            f"refused to load it: {refused}."
        )
    return skops_io.load(path, trusted=untrusted)
