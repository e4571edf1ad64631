"""Security faults: crafted model files and crafted CSV values.

Faults guarded against:

* A crafted ``.skops`` file that names a function or class skops would call with arguments from
  the file (``robustkernel._atomic.atomic_write``, ``builtins.open``, names robustkernel merely
  imports such as ``robustkernel.datasets._cache.Path``): ``load_model`` must refuse it before
  anything is built, with ValueError naming the refused types. The allow-list
  (``persistence.SKOPS_TRUSTED_TYPES``) holds only estimator classes, and every estimator
  configuration still round-trips through ``.skops``.
* A crafted pickle given to ``robustkernel predict``: without ``--trust-pickle`` it is never
  unpickled (exit code 2, one line, nothing written); ``fit`` and ``learn-metric`` write the safe
  ``model.skops`` (``model.joblib`` with a note only when skops is missing).
* CSV formula injection: class labels and column names such as ``=HYPERLINK(...)`` are written
  with a leading ``'`` in every CSV the command line writes; numbers are untouched.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import pathlib
import warnings
import zipfile
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.compose import TransformedTargetRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import RobustScaler, StandardScaler

import robustkernel
from conftest import run_cli as run
from robustkernel import (
    MetricKernelRidge,
    MetricKernelRidgeCV,
    SubquantileClassifier,
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
    SubquantileMLPClassifier,
    SubquantileMLPRegressor,
    SubquantileRegressor,
    __version__,
    baselines,
)
from robustkernel.commands import _model_file
from robustkernel.commands._csv_output import escape_formula, write_csv
from robustkernel.persistence import FORMAT, SKOPS_TRUSTED_TYPES, load_model, save_model

skops_io = pytest.importorskip("skops.io")

N_ROWS = 60


def _features(seed: int = 0, n_rows: int = N_ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n_rows, 3)), columns=["a", "b", "c"])


@pytest.fixture
def classification_csv(tmp_path) -> Path:
    """Text labels by the sign of a + b."""
    frame = _features()
    frame["label"] = np.where(frame["a"] + frame["b"] > 0, "yes", "no")
    path = tmp_path / "classification.csv"
    frame.to_csv(path, index=False)
    return path


# -- the .skops allow-list ---------------------------------------------------------------------

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 3))
Y_REGRESSION = np.sin(X[:, 0])
Y_BINARY = np.where(X[:, 0] > 0, "yes", "no")
Y_MULTICLASS = np.array(["a", "b", "c"])[np.arange(30) % 3]


def _in_pipeline(estimator: BaseEstimator) -> Pipeline:
    """The pipeline of ``robustkernel fit``: robust scaling, then the estimator."""
    return Pipeline([("scale", RobustScaler()), ("model", estimator)])


def _oracle() -> BaseEstimator:
    model = baselines.OracleERM(SubquantileKernelRegressor(epsilon=0.0))
    return model.fit(X, Y_REGRESSION, clean_mask=np.arange(30) >= 3)


# name -> (unfitted model, X, y); every estimator and every configuration that changes what a
# fitted estimator holds (feature maps, classes, solver state).
CONFIGURATIONS = {
    "subq regressor exact": (SubquantileKernelRegressor(), X, Y_REGRESSION),
    "subq regressor auto": (SubquantileKernelRegressor(epsilon="auto"), X, Y_REGRESSION),
    "subq regressor nystroem": (SubquantileKernelRegressor(n_components=10), X, Y_REGRESSION),
    "subq regressor rff": (
        SubquantileKernelRegressor(
            kernel="rbf", n_components=10, approximation="rff", random_state=0
        ),
        X,
        Y_REGRESSION,
    ),
    "subq regressor float32": (
        SubquantileKernelRegressor(n_components=10, dtype=np.float32),
        X,
        Y_REGRESSION,
    ),
    "subq regressor gd": (SubquantileKernelRegressor(kernel="rbf", solver="gd"), X, Y_REGRESSION),
    "subq regressor nesterov": (
        SubquantileKernelRegressor(kernel="rbf", solver="nesterov", smoothing=0.1),
        X,
        Y_REGRESSION,
    ),
    "subq classifier binary": (SubquantileKernelClassifier(), X, Y_BINARY),
    "subq classifier multiclass": (SubquantileKernelClassifier(), X, Y_MULTICLASS),
    "subq classifier auto": (SubquantileKernelClassifier(epsilon="auto"), X, Y_BINARY),
    "subq classifier nystroem multiclass": (
        SubquantileKernelClassifier(n_components=10, solver="momentum"),
        X,
        Y_MULTICLASS,
    ),
    "tilted regressor": (baselines.TiltedKernelRegressor(), X, Y_REGRESSION),
    "tilted classifier multiclass": (baselines.TiltedKernelClassifier(), X, Y_MULTICLASS),
    "sever regressor": (baselines.SeverKernelRegressor(), X, Y_REGRESSION),
    "sever classifier binary": (baselines.SeverKernelClassifier(), X, Y_BINARY),
    "crr": (baselines.CRRKernelRegressor(), X, Y_REGRESSION),
    "stir": (baselines.STIRKernelRegressor(), X, Y_REGRESSION),
    "torrent gd": (baselines.TorrentGDKernelRegressor(), X, Y_REGRESSION),
    "metric kernel ridge": (
        TransformedTargetRegressor(
            make_pipeline(StandardScaler(), MetricKernelRidge(lam=0.1, max_iter=20)),
            transformer=StandardScaler(),
        ),
        X,
        Y_REGRESSION,
    ),
    "subquantile regressor around ridge": (
        SubquantileRegressor(Ridge(), random_state=0),
        X,
        Y_REGRESSION,
    ),
    "subquantile classifier around logistic regression": (
        SubquantileClassifier(LogisticRegression(), epsilon=0.1),
        X,
        Y_MULTICLASS,
    ),
    "subquantile network regressor": (
        SubquantileMLPRegressor(hidden_units=4, max_iter=20, random_state=0),
        X,
        Y_REGRESSION,
    ),
    "subquantile network classifier multiclass": (
        SubquantileMLPClassifier(hidden_units=4, max_iter=20, random_state=0),
        X,
        Y_MULTICLASS,
    ),
    "metric kernel ridge cv": (
        MetricKernelRidgeCV(lams=[0.3, 0.1], max_iter=20, random_state=0),
        X,
        Y_REGRESSION,
    ),
    "metric kernel ridge cv, gaussian process predictor": (
        MetricKernelRidgeCV(
            lams=[0.3, 0.1], max_iter=20, random_state=0, predictor="gaussian_process"
        ),
        X,
        Y_REGRESSION,
    ),
}


NEED_TORCH = {"subquantile network regressor", "subquantile network classifier multiclass"}


def _fitted(name: str) -> tuple[BaseEstimator, np.ndarray]:
    """The model of configuration ``name`` fitted (inside the fit pipeline), and its input."""
    if name == "oracle":
        return _oracle(), X
    if name == "subq precomputed nystroem":  # a kernel matrix: no feature scaling
        K = rbf_kernel(X)
        model = SubquantileKernelRegressor(kernel="precomputed", n_components=10)
        return model.fit(K, Y_REGRESSION), K
    model, X_fit, y = CONFIGURATIONS[name]
    if not isinstance(model, TransformedTargetRegressor):
        model = _in_pipeline(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X_fit, y), X_fit


@pytest.mark.parametrize("name", [*CONFIGURATIONS, "oracle", "subq precomputed nystroem"], ids=str)
def test_every_estimator_configuration_round_trips_through_skops(tmp_path, name):
    """The allow-list is complete: each fitted model loads back and predicts the same."""
    if name in NEED_TORCH:
        pytest.importorskip("torch", reason="the networks train with the optional PyTorch")
    model, X_fit = _fitted(name)
    loaded = load_model(save_model(model, tmp_path / "model.skops"))
    assert type(loaded) is type(model)
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict(X_fit), model.predict(X_fit))
        expected = model.predict_proba(X_fit)
        np.testing.assert_allclose(loaded.predict_proba(X_fit), expected, rtol=1e-12)
    else:
        np.testing.assert_allclose(loaded.predict(X_fit), model.predict(X_fit), rtol=1e-12)


def _resolve(name: str) -> object:
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def test_allow_list_holds_only_estimator_and_data_classes():
    """No function, module or prefix: each entry is a class, named where it is defined."""
    for name in SKOPS_TRUSTED_TYPES:
        obj = _resolve(name)
        assert isinstance(obj, type), f"{name} is not a class"
        assert f"{obj.__module__}.{obj.__qualname__}" == name, f"{name} is an alias"
        if name.startswith("robustkernel."):
            assert issubclass(obj, BaseEstimator), f"{name} is not an estimator or transformer"
        else:
            assert name.split(".")[0] in {"numpy", "sklearn"}, f"{name} is not numpy/sklearn"


def test_allow_list_names_every_public_estimator():
    """A new public estimator must be added to the allow-list (and round-trip above)."""
    public = [
        getattr(module, name)
        for module in (robustkernel, baselines)
        for name in module.__all__
        if isinstance(getattr(module, name), type)
        and issubclass(getattr(module, name), BaseEstimator)
    ]
    assert len(public) >= 11
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in public}
    assert names <= SKOPS_TRUSTED_TYPES, sorted(names - SKOPS_TRUSTED_TYPES)


def _constructor_node(module: str, name: str, arguments: tuple) -> dict:
    """A skops schema node that loads as ``module.name(*arguments)``."""
    arguments_schema = json.loads(
        zipfile.ZipFile(io.BytesIO(skops_io.dumps(arguments))).read("schema.json")
    )
    return {
        "__class__": name,
        "__module__": module,
        "__loader__": "ConstructorFromReduceNode",
        "content": arguments_schema,
    }


def _tampered_model_file(path: Path, module: str, name: str, arguments: tuple) -> Path:
    """A genuine .skops model file whose ``version`` entry is replaced by ``module.name(...)``."""
    genuine = path.with_name("genuine.skops")
    save_model(SubquantileKernelRegressor(epsilon=0.1).fit(X, Y_REGRESSION), genuine)
    with zipfile.ZipFile(genuine) as archive:
        members = {member: archive.read(member) for member in archive.namelist()}
    schema = json.loads(members["schema.json"])
    schema["content"]["version"] = _constructor_node(module, name, arguments)
    members["schema.json"] = json.dumps(schema).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


WRITERS = {
    # a robustkernel function: trusted by the old "robustkernel." prefix rule
    "robustkernel._atomic.atomic_write": lambda marker: (marker, "written by the model file"),
    # a built-in, outside robustkernel
    "builtins.open": lambda marker: (marker, "w"),
}


@pytest.mark.parametrize("target", sorted(WRITERS))
def test_malicious_skops_file_is_refused_before_anything_is_built(tmp_path, target):
    module, _, name = target.rpartition(".")
    marker = tmp_path / "marker.txt"
    path = _tampered_model_file(tmp_path / "evil.skops", module, name, WRITERS[target](str(marker)))
    # The file is a real exploit: skops trusting what the file names writes the marker.
    loaded = skops_io.load(path, trusted=skops_io.get_untrusted_types(file=path))
    if hasattr(loaded["version"], "close"):
        loaded["version"].close()
    assert marker.exists()
    marker.unlink()

    with pytest.raises(ValueError, match=rf"refused to load it: .*{target}"):
        load_model(path)
    assert not marker.exists()


def test_skops_file_naming_an_imported_robustkernel_name_is_refused(tmp_path):
    """``robustkernel.datasets._cache.Path`` is pathlib's, not a model class."""
    marker = tmp_path / "marker.txt"
    path = _tampered_model_file(
        tmp_path / "evil.skops", "robustkernel.datasets._cache", "Path", (str(marker),)
    )
    with pytest.raises(ValueError, match=r"robustkernel\.datasets\._cache\.Path"):
        load_model(path)
    assert not marker.exists()


# -- pickles and the command line ---------------------------------------------------------------


class _Exploit:
    """Unpickling it writes a file, in pure Python."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return pathlib.Path.write_text, (self.marker, "written by the pickle")


@pytest.mark.parametrize("name", ["model.joblib", "model.pkl", "model"])
def test_predict_refuses_a_pickle_without_trust_pickle(tmp_path, classification_csv, capsys, name):
    marker = tmp_path / "marker.txt"
    evil = tmp_path / name
    joblib.dump({"format": FORMAT, "version": __version__, "model": _Exploit(marker)}, evil)
    joblib.load(evil)  # the file is a real exploit
    assert marker.exists()
    marker.unlink()

    out = tmp_path / "predictions.csv"
    before = set(tmp_path.iterdir())
    code, stdout, stderr = run(
        ["predict", str(evil), str(classification_csv), "--out", str(out)], capsys
    )
    assert code == 2 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1
    assert "pickle" in stderr and "--trust-pickle" in stderr and "model.skops" in stderr
    assert not marker.exists()
    assert not out.exists() and set(tmp_path.iterdir()) == before


def test_fit_writes_model_skops_and_predict_reads_it(tmp_path, classification_csv, capsys):
    out = tmp_path / "fit"
    argv = ["fit", str(classification_csv), "--target", "label", "--task", "classification"]
    code, stdout, _ = run([*argv, "--epsilon", "0.1", "--out", str(out)], capsys)
    assert code == 0 and "pickle" not in stdout
    assert (out / "model.skops").is_file() and not (out / "model.joblib").exists()
    assert "model.skops (skops format, safe to load)" in (out / "report.md").read_text()
    new_csv = tmp_path / "new.csv"
    new = _features(seed=2, n_rows=20)
    new.to_csv(new_csv, index=False)
    predictions = tmp_path / "predictions.csv"
    argv = ["predict", str(out / "model.skops"), str(new_csv), "--out", str(predictions)]
    code, _, stderr = run(argv, capsys)
    assert code == 0 and stderr == ""
    model = load_model(out / "model.skops")
    written = pd.read_csv(predictions)
    np.testing.assert_array_equal(written["predicted"], model.predict(new))
    np.testing.assert_allclose(
        written[["probability_no", "probability_yes"]], model.predict_proba(new), rtol=1e-12
    )


def test_without_skops_fit_writes_a_pickle_and_says_so(
    tmp_path, classification_csv, capsys, monkeypatch
):
    """The fallback: model.joblib, a note in the output and report; predict needs the flag."""
    monkeypatch.setattr(_model_file, "skops_available", lambda: False)
    out = tmp_path / "fit"
    argv = ["fit", str(classification_csv), "--target", "label", "--task", "classification"]
    code, stdout, _ = run([*argv, "--epsilon", "0.1", "--out", str(out)], capsys)
    assert code == 0 and _model_file.PICKLE_NOTE in stdout
    assert (out / "model.joblib").is_file() and not (out / "model.skops").exists()
    assert _model_file.PICKLE_NOTE in (out / "report.md").read_text()

    predictions = tmp_path / "predictions.csv"
    argv = [
        "predict",
        str(out / "model.joblib"),
        str(classification_csv),
        "--out",
        str(predictions),
    ]
    code, _, stderr = run(argv, capsys)
    assert code == 2 and "--trust-pickle" in stderr and not predictions.exists()
    code, _, stderr = run([*argv, "--trust-pickle"], capsys)
    assert code == 0 and stderr == ""
    data = pd.read_csv(classification_csv)
    expected = load_model(out / "model.joblib").predict(data[["a", "b", "c"]])
    np.testing.assert_array_equal(pd.read_csv(predictions)["predicted"], expected)


def test_learn_metric_writes_model_skops(tmp_path, capsys):
    frame = _features()
    frame["y"] = np.sin(2 * frame["b"])
    csv_path = tmp_path / "metric.csv"
    frame.to_csv(csv_path, index=False)
    out = tmp_path / "metric"
    argv = ["learn-metric", str(csv_path), "--target", "y", "--max-iter", "50", "--quiet"]
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    assert (out / "model.skops").is_file() and not (out / "model.joblib").exists()
    predictions = tmp_path / "predictions.csv"
    argv = ["predict", str(out / "model.skops"), str(csv_path), "--out", str(predictions)]
    assert run(argv, capsys)[0] == 0
    expected = load_model(out / "model.skops").predict(frame[["a", "b", "c"]])
    np.testing.assert_allclose(pd.read_csv(predictions)["predicted"], expected, rtol=1e-12)


# -- CSV formula injection ----------------------------------------------------------------------

FORMULA_LABELS = ["=1+1", "@SUM(A1)", "+x", "-y", "\tz"]
FORMULA_COLUMNS = ["=cmd", "-n"]  # feature names; "b" stays plain
PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _raw_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


def _assert_escaped(text: str) -> None:
    """``text`` (a raw CSV cell) is not a formula: a number, or no formula prefix."""
    try:
        float(text)
    except ValueError:
        assert not text.startswith(PREFIXES), repr(text)


def test_csv_outputs_escape_formulas_and_keep_numbers(tmp_path, capsys):
    frame = _features()
    frame.columns = [*FORMULA_COLUMNS, "b"]
    frame.loc[0, "b"] = -1.5
    frame["label"] = np.array(FORMULA_LABELS)[np.arange(N_ROWS) % len(FORMULA_LABELS)]
    data = tmp_path / "formulas.csv"
    frame.to_csv(data, index=False, quoting=csv.QUOTE_NONNUMERIC)
    out = tmp_path / "fit"
    argv = ["fit", str(data), "--target", "label", "--task", "classification", "--quiet"]
    assert run([*argv, "--epsilon", "0.1", "--out", str(out)], capsys)[0] == 0
    predictions = tmp_path / "predictions.csv"
    argv = ["predict", str(out / "model.skops"), str(data), "--out", str(predictions)]
    assert run(argv, capsys)[0] == 0

    escaped_labels = {"'" + label for label in FORMULA_LABELS}
    for path in (out / "outliers.csv", out / "predictions.csv", predictions):
        header, *rows = _raw_rows(path)
        for cell in header + [cell for row in rows for cell in row]:
            _assert_escaped(cell)
        table = pd.DataFrame(rows, columns=header)
        for column in {"label", "observed", "predicted"} & set(header):
            assert set(table[column]) <= escaped_labels, (path.name, column)
        if path.name == "outliers.csv":
            assert header[3:] == ["'=cmd", "'-n", "b", "label"]
            assert table["b"].iloc[0] == "-1.5"  # a negative number stays a number
            np.testing.assert_allclose(table["'-n"].astype(float), frame["-n"])
        if path == predictions:
            assert header[2:] == sorted(f"probability_{label}" for label in FORMULA_LABELS)


def test_learn_metric_components_escape_feature_names(tmp_path, capsys):
    frame = _features()
    frame.columns = ["=cmd", "@x", "b"]
    frame["y"] = np.sin(frame["b"])
    data = tmp_path / "metric.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "metric"
    argv = ["learn-metric", str(data), "--target", "y", "--max-iter", "50", "--quiet"]
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    features = [row[0] for row in _raw_rows(out / "components.csv")[1:]]
    assert features == ["'=cmd", "'@x", "b"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+x", "'+x"),
        ("-y", "'-y"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tz", "'\tz"),
        ("\rz", "'\rz"),
        ("-1+2", "'-1+2"),
        ("-1.5", "-1.5"),
        ("+2e3", "+2e3"),
        ("plain", "plain"),
        ("", ""),
        (-1.5, -1.5),
        (3, 3),
    ],
)
def test_escape_formula(value, expected):
    assert escape_formula(value) == expected


def test_write_csv_escapes_names_and_text_cells_only(tmp_path):
    frame = pd.DataFrame({"=a": ["=x", "ok"], "n": [-1.5, 2.0], "flag": [True, False]})
    path = tmp_path / "t.csv"
    write_csv(frame, path)
    assert path.read_text().splitlines() == ["'=a,n,flag", "'=x,-1.5,True", "ok,2.0,False"]
