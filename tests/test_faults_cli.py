"""Fault injection on the command line: every failure is one line, exit code 2, nothing left.

Faults guarded against (``fit``, ``predict``, ``learn-metric``, and ``demo`` / ``reproduce``
where they apply):

* a folder given as DATA.csv; ``predict --out`` an existing folder; ``demo --out`` an existing
  file; ``reproduce --summary --out`` a missing folder; ``--out`` inside a missing folder;
* a model file that is not one (a CSV renamed to ``.joblib``: ``zlib.error`` when it starts with
  ``x``);
* the file system failing while outputs are written: a read-only parent of ``--out`` (EROFS,
  EACCES), a full disk (ENOSPC);
* two runs racing for the same ``--out`` (the loser's rename meets a non-empty folder);
* SIGTERM and Ctrl-C in the middle of a fit (no hidden ``.NAME.XXXX`` temporary left);
* output permissions that ignored the umask (private temporaries renamed into place);
* misleading messages: a one-column file with header ``y`` (the delimiter sniffer took ``y``
  as the delimiter), a target of 1e200 (a log-scaled plot of infinite scores crashed the
  report), ``|`` and line breaks in column names (broken Markdown tables), duplicate column
  names (silently renamed ``x.1`` by pandas), a classification target with a class per row,
  ``learn-metric`` on a target of 1e200 ("Input y contains NaN": the target's variance
  overflowed; a target of any magnitude now fits, one that float64 cannot standardize is refused
  by name);
* ``fit --n-components`` for large tables;
* a table-driven pass of hostile CSV files and arguments (empty, header only, binary, not UTF-8,
  very long line / header, quoted newlines, byte order mark, all-NaN and text columns, huge
  numbers, negative zero, duplicate headers, missing target, ``--target`` naming a feature,
  unknown options, out-of-range ``--epsilon`` / ``--alpha`` / ``--lam``, paths with spaces and
  non-ASCII letters, ``--out`` in a missing folder) x (fit, predict, learn-metric): each ends
  with exit code 0 and complete outputs, or exit code 2, one stderr line and no leftover file.
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import robustkernel._atomic as atomic
from conftest import run_cli as run
from robustkernel.cli import build_parser, main
from robustkernel.commands import _fit_report
from robustkernel.commands._tabular import read_csv
from robustkernel.persistence import load_model

N_ROWS = 24
FIT = ["--epsilon", "0.1", "--quiet"]
METRIC = ["--max-iter", "30", "--quiet"]
FIT_OUTPUTS = {"outliers.csv", "predictions.csv", "report.md", "outliers.png"}
METRIC_OUTPUTS = {"components.csv", "eigenvalues.csv", "transformed.csv", "report.md"}


def tree(folder: Path) -> set[str]:
    """Every path under ``folder`` (hidden ones included), relative."""
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


def assert_one_line_error(code: int, stderr: str, command: str) -> str:
    """Exit code 2 and exactly one stderr line ``robustkernel COMMAND: error: ...``."""
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"robustkernel {command}: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def frame(n: int = N_ROWS, seed: int = 0) -> pd.DataFrame:
    """Features a, b, c and a smooth target y."""
    rng = np.random.default_rng(seed)
    data = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    data["y"] = np.sin(data["a"]) + 0.1 * rng.normal(size=n)
    return data


def write(path: Path, data: pd.DataFrame | bytes | str) -> Path:
    if isinstance(data, pd.DataFrame):
        data.to_csv(path, index=False)
    elif isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def has_option(command: str, option: str) -> bool:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    return option in subparsers.choices[command]._option_string_actions


def predict_argv(model: Path, data: Path | str, out: Path | str) -> list[str]:
    """``predict`` arguments, with ``--trust-pickle`` for a pickle model where it exists."""
    argv = ["predict", str(model), str(data), "--out", str(out), "--quiet"]
    if Path(model).suffix != ".skops" and has_option("predict", "--trust-pickle"):
        argv.append("--trust-pickle")
    return argv


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    """The model file of a small regression fit (features a, b, c)."""
    folder = tmp_path_factory.mktemp("fitted")
    data = write(folder / "train.csv", frame())
    assert main(["fit", str(data), "--target", "y", *FIT, "--out", str(folder / "fit")]) == 0
    return next((folder / "fit").glob("model.*"))


@pytest.fixture
def good_csv(tmp_path) -> Path:
    return write(tmp_path / "good.csv", frame())


# --- folders, existing and missing outputs ---------------------------------------------------


@pytest.mark.parametrize("command", ["fit", "learn-metric", "predict"])
def test_a_folder_as_data_is_one_line(tmp_path, capsys, fitted, command):
    (tmp_path / "data").mkdir()
    out = tmp_path / "out"
    before = tree(tmp_path)
    if command == "predict":
        argv = predict_argv(fitted, tmp_path / "data", out)
    else:
        argv = [command, str(tmp_path / "data"), "--target", "y", "--out", str(out), "--quiet"]
    line = assert_one_line_error(*run(argv, capsys)[::2], command)
    assert "is a folder" in line
    assert tree(tmp_path) == before


def test_predict_out_an_existing_folder(tmp_path, capsys, fitted, good_csv):
    (tmp_path / "out").mkdir()
    before = tree(tmp_path)
    code, _, stderr = run(predict_argv(fitted, good_csv, tmp_path / "out"), capsys)
    assert "is a folder" in assert_one_line_error(code, stderr, "predict")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("start", ["x1,x2,y\n", "a,b,c\n"])
def test_a_csv_renamed_to_joblib_is_not_a_model(tmp_path, capsys, good_csv, start):
    """'x...' makes joblib take the file for zlib data (zlib.error); anything else a pickle."""
    model = write(tmp_path / "model.joblib", start + "1,2,3\n4,5,6\n")
    argv = ["predict", str(model), str(good_csv), "--out", str(tmp_path / "p.csv"), "--quiet"]
    if has_option("predict", "--trust-pickle"):
        argv.append("--trust-pickle")
    before = tree(tmp_path)
    line = assert_one_line_error(*run(argv, capsys)[::2], "predict")
    assert "not a robustkernel model file" in line
    assert tree(tmp_path) == before


def test_demo_out_an_existing_file(tmp_path, capsys):
    out = write(tmp_path / "taken", "mine")
    code, _, stderr = run(["demo", "--out", str(out)], capsys)
    assert "not a folder" in assert_one_line_error(code, stderr, "demo")
    assert out.read_text() == "mine" and tree(tmp_path) == {"taken"}


def test_reproduce_summary_of_a_missing_folder(tmp_path, capsys):
    code, _, stderr = run(["reproduce", "--summary", "--out", str(tmp_path / "none")], capsys)
    assert "no such folder" in assert_one_line_error(code, stderr, "reproduce")
    assert tree(tmp_path) == set()


# --- the file system failing ------------------------------------------------------------------


def _refuse(code: int) -> Callable[..., None]:
    def refuse(*args, dir=None, **kwargs):
        raise OSError(code, os.strerror(code), str(dir))

    return refuse


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
@pytest.mark.parametrize("command", ["fit", "learn-metric", "predict"])
def test_unwritable_out_parent_is_one_line(
    tmp_path, capsys, monkeypatch, fitted, good_csv, command, code
):
    """Simulated (tests may run as root, where chmod does not stop writes)."""
    monkeypatch.setattr(atomic.tempfile, "mkdtemp", _refuse(code))
    monkeypatch.setattr(atomic.tempfile, "mkstemp", _refuse(code))
    out = tmp_path / "out"
    before = tree(tmp_path)
    if command == "predict":
        argv = predict_argv(fitted, good_csv, out)
    else:
        argv = [command, str(good_csv), "--target", "y", "--out", str(out), "--quiet"]
    line = assert_one_line_error(*run(argv, capsys)[::2], command)
    assert os.strerror(code) in line and str(tmp_path) in line
    assert tree(tmp_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_really_read_only_out_parent(tmp_path, capsys, good_csv):
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        argv = ["fit", str(good_csv), "--target", "y", *FIT, "--out", str(parent / "o")]
        line = assert_one_line_error(*run(argv, capsys)[::2], "fit")
        assert "Permission denied" in line and not any(parent.iterdir())
    finally:
        parent.chmod(0o700)


def test_full_disk_while_writing_the_report(tmp_path, capsys, monkeypatch, good_csv):
    def full(path, *args, **kwargs):
        Path(path).write_text("half a rep")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(_fit_report, "write_report", full)
    out = tmp_path / "out"
    before = tree(tmp_path)
    argv = ["fit", str(good_csv), "--target", "y", *FIT, "--out", str(out)]
    line = assert_one_line_error(*run(argv, capsys)[::2], "fit")
    assert "No space left on device" in line and "disk is full" in line
    assert f"{out / 'report.md'}: " in line  # the file asked for, not the hidden temporary
    assert tree(tmp_path) == before


def test_full_disk_while_writing_predictions(tmp_path, capsys, monkeypatch, fitted, good_csv):
    def full(self, path, *args, **kwargs):
        Path(path).write_text("row,predicted\n1,")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    before = tree(tmp_path)
    code, _, stderr = run(predict_argv(fitted, good_csv, tmp_path / "p.csv"), capsys)
    assert "No space left on device" in assert_one_line_error(code, stderr, "predict")
    assert tree(tmp_path) == before


def test_a_run_racing_for_the_same_out_loses_cleanly(tmp_path, capsys, monkeypatch, good_csv):
    """The other run fills --out after our check and before our rename: its output stays."""
    out = tmp_path / "out"
    write_report = _fit_report.write_report

    def other_run_finishes_first(path, *args, **kwargs):
        out.mkdir()
        (out / "theirs.txt").write_text("theirs")
        write_report(path, *args, **kwargs)

    monkeypatch.setattr(_fit_report, "write_report", other_run_finishes_first)
    argv = ["fit", str(good_csv), "--target", "y", *FIT, "--out", str(out)]
    line = assert_one_line_error(*run(argv, capsys)[::2], "fit")
    assert f"--out {out} already exists" in line
    assert tree(tmp_path) == {"good.csv", "out", "out/theirs.txt"}


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(tmp_path, capsys, fitted, good_csv, mask):
    previous = os.umask(mask)
    try:
        assert atomic.current_umask() == mask
        out = tmp_path / "out"
        argv = ["fit", str(good_csv), "--target", "y", *FIT, "--out", str(out)]
        assert run(argv, capsys)[0] == 0
        predictions = tmp_path / "p.csv"
        assert run(predict_argv(fitted, good_csv, predictions), capsys)[0] == 0
        written = atomic.atomic_write(tmp_path / "plain.txt", "text")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~mask
    for path in [*out.iterdir(), predictions, written]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path.name


# --- signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signum", "status"),
    [(signal.SIGTERM, 128 + 15), pytest.param(signal.SIGINT, 128 + 2, marks=pytest.mark.slow)],
)
def test_a_signal_mid_fit_leaves_nothing(tmp_path, signum, status):
    """A real process killed while fitting (about 5 s of work) removes its temporary folder."""
    data = write(tmp_path / "big.csv", frame(1200))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "robustkernel.cli", "fit", str(data), "--target", "y"]
    # A shell starts background jobs with SIGINT ignored, and CPython turns Ctrl-C into
    # KeyboardInterrupt only when SIGINT is at its default: give the child the default, as a
    # terminal would, so that the test does not depend on how the suite itself was started.
    process = subprocess.Popen(
        [*command, "--out", str(out), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.*")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no temporary folder appeared"
            time.sleep(0.05)
        time.sleep(0.5)  # into the fit
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == status, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("robustkernel fit: error: "), stderr
    assert tree(tmp_path) == {"big.csv"}


# --- misleading messages ----------------------------------------------------------------------


def test_one_column_header_y_is_read_with_commas(tmp_path, capsys):
    data = write(tmp_path / "one.csv", pd.DataFrame({"y": np.arange(20.0)}))
    argv = ["fit", str(data), "--target", "y", "--out", str(tmp_path / "o"), "--quiet"]
    line = assert_one_line_error(*run(argv, capsys)[::2], "fit")
    assert "no feature column besides the target" in line and "Unnamed" not in line


@pytest.mark.parametrize(
    ("text", "columns"),
    [
        ("y\n1.5\n2\n", ["y"]),
        ("my target\n1\n2\n", ["my target"]),
        ("a;b;y\n1,5;2,5;3\n4,1;5,2;6\n", ["a", "b", "y"]),
        ("a\tb\ty\n1\t2\t3\n", ["a", "b", "y"]),
        ("a|b|y\n1|2|3\n", ["a", "b", "y"]),
        ("a b y\n1 2 3\n4 5 6\n", ["a", "b", "y"]),
        ("a, b, y\n1, 2, 3\n", ["a", "b", "y"]),
        ("my a,my b,y\n1,2,3\n", ["my a", "my b", "y"]),
        ('"a\nA",b,y\n1,2,3\n', ["a\nA", "b", "y"]),
        ("\ufeffy,a\n1,2\n", ["y", "a"]),
    ],
)
def test_delimiters_are_sniffed_among_the_usual_ones(tmp_path, text, columns):
    assert list(read_csv(write(tmp_path / "t.csv", text)).columns) == columns


def test_duplicate_column_names_are_refused(tmp_path, capsys):
    rows = "\n".join(f"{i},{2 * i},{i % 3},{i}" for i in range(20))
    data = write(tmp_path / "dup.csv", "x1,x1,x2,y\n" + rows + "\n")
    argv = ["fit", str(data), "--target", "y", "--out", str(tmp_path / "o"), "--quiet"]
    line = assert_one_line_error(*run(argv, capsys)[::2], "fit")
    assert "'x1'" in line and "x1.1" not in line


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([f"id{i}" for i in range(N_ROWS)], "different value in every row"),
        ([f"c{i // 1.5:.0f}" for i in range(N_ROWS)], "more than half the rows"),
    ],
)
def test_identifier_like_class_targets_are_refused(tmp_path, capsys, labels, expected):
    data = frame().assign(y=labels)
    csv = write(tmp_path / "ids.csv", data)
    argv = ["fit", str(csv), "--target", "y", "--task", "classification", "--quiet"]
    line = assert_one_line_error(*run([*argv, "--out", str(tmp_path / "o")], capsys)[::2], "fit")
    assert expected in line and not (tmp_path / "o").exists()


def test_an_extreme_target_never_crashes_the_report(tmp_path, capsys):
    data = frame()
    data.loc[0, "y"] = 1e200
    csv = write(tmp_path / "huge.csv", data)
    out = tmp_path / "out"
    code, _, stderr = run(["fit", str(csv), "--target", "y", "--quiet", "--out", str(out)], capsys)
    if code == 0:
        assert FIT_OUTPUTS | {"fit.png"} <= {p.name for p in out.iterdir()}
    else:
        assert_one_line_error(code, stderr, "fit")
        assert "log-scaled" not in stderr and tree(tmp_path) == {"huge.csv"}


@pytest.mark.parametrize("factor", [1e200, 1e-120])
def test_learn_metric_on_a_huge_or_tiny_target_fits_as_on_its_scaled_values(
    tmp_path, capsys, factor
):
    """StandardScaler squares the target: at 1e200 the variance overflowed and the command said
    "Input y contains NaN". Divided by its largest magnitude first, the target of any scale
    gives the fit of the target in ordinary units, and predictions in its own units."""
    data = frame()
    outs = {}
    for name, scale in [("plain", 1.0), ("scaled", factor)]:
        csv = write(tmp_path / f"{name}.csv", data.assign(y=data["y"] * scale))
        outs[name] = tmp_path / f"out-{name}"
        argv = ["learn-metric", str(csv), "--target", "y", *METRIC, "--out", str(outs[name])]
        code, _, stderr = run(argv, capsys)
        assert (code, stderr) == (0, ""), stderr
    components = [pd.read_csv(out / "components.csv") for out in outs.values()]
    pd.testing.assert_frame_equal(*components, rtol=1e-6)
    model = load_model(next(outs["scaled"].glob("model.*")))
    plain = load_model(next(outs["plain"].glob("model.*")))
    X = data[["a", "b", "c"]]
    np.testing.assert_allclose(model.predict(X), factor * plain.predict(X), rtol=1e-6)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({0: 1e200}, "span too wide a range"),  # 1e200 among values near 1
        ({0: -1e200, 3: 1e200}, "span too wide a range"),
        ("tiny", "too small to standardize"),  # 1e-200: squares underflow
    ],
    ids=["one 1e200", "two 1e200", "all 1e-200"],
)
def test_learn_metric_says_why_a_target_cannot_be_standardized(tmp_path, capsys, values, expected):
    data = frame()
    if values == "tiny":
        data["y"] *= 1e-200
    else:
        for row, value in values.items():
            data.loc[row, "y"] = value
    csv = write(tmp_path / "extreme.csv", data)
    argv = ["learn-metric", str(csv), "--target", "y", *METRIC, "--out", str(tmp_path / "o")]
    line = assert_one_line_error(*run(argv, capsys)[::2], "learn-metric")
    assert expected in line and "NaN" not in line
    assert tree(tmp_path) == {"extreme.csv"}


@pytest.mark.parametrize(
    "scores",
    [
        np.full(10, np.inf),
        np.array([np.nan, 1.0, np.inf, 2.0]),
        np.zeros(10),
        np.array([1e-300, 1e300, 1.0]),
        np.array([]),
    ],
)
def test_plots_of_extreme_values_write_a_png(tmp_path, scores):
    _fit_report.plot_outlier_scores(scores, float(np.inf), tmp_path / "scores.png")
    _fit_report.plot_outlier_scores(scores, 1.0, tmp_path / "scores1.png")
    observed = np.concatenate([scores, [1e200, -1e200]])
    _fit_report.plot_predicted_vs_observed(
        observed, observed[::-1], observed > 1, tmp_path / "fit.png"
    )
    _fit_report.plot_eigenvalues(scores, tmp_path / "eigenvalues.png")
    for name in ["scores.png", "scores1.png", "fit.png", "eigenvalues.png"]:
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_pipes_and_line_breaks_in_column_names_keep_the_report_tables(tmp_path, capsys):
    data = frame().rename(columns={"b": "b|B", "c": "c\nC"})
    csv = write(tmp_path / "names.csv", data)
    out = tmp_path / "out"
    argv = ["fit", str(csv), "--target", "y", *FIT, "--out", str(out)]
    assert run(argv, capsys)[0] == 0
    report = (out / "report.md").read_text()
    assert r"b\|B" in report and "c C" in report
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| row "))
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    cells = {line.replace(r"\|", "").count("|") for line in rows}
    assert len(cells) == 1 and len(rows) > 2  # every row of the table has the header's cells


def test_n_components_fits_on_approximate_features(tmp_path, capsys, good_csv):
    out = tmp_path / "out"
    argv = ["fit", str(good_csv), "--target", "y", *FIT, "--n-components", "8"]
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    assert load_model(next(out.glob("model.*")))[-1].n_components == 8
    assert "8 Nystroem features" in (out / "report.md").read_text()
    for bad in ["0", "-3", "2.5", "many"]:
        code, _, stderr = run([*argv[:-1], bad, "--out", str(tmp_path / "o2")], capsys)
        assert "--n-components" in assert_one_line_error(code, stderr, "fit")


# --- the table-driven pass ---------------------------------------------------------------------

EITHER = None  # exit 0 with complete outputs, or exit 2 with one line


def _bom(tmp: Path) -> tuple[Path, list[str]]:
    text = frame()[["y", "a", "b", "c"]].to_csv(index=False)
    return write(tmp / "bom.csv", "\ufeff" + text), ["--target", "y"]


def _latin1(tmp: Path) -> tuple[Path, list[str]]:
    data = frame().rename(columns={"c": "café"}).to_csv(index=False)
    return write(tmp / "latin1.csv", data.encode("latin-1")), ["--target", "y"]


def _long_line(tmp: Path) -> tuple[Path, list[str]]:
    text = frame().to_csv(index=False)
    return write(tmp / "long.csv", text + "1" * 300_000 + ",0,0,0\n"), ["--target", "y"]


def _long_header(tmp: Path) -> tuple[Path, list[str]]:
    text = frame().rename(columns={"c": "c" * 300_000}).to_csv(index=False)
    return write(tmp / "long_header.csv", text), ["--target", "y"]


def _quoted_newlines(tmp: Path) -> tuple[Path, list[str]]:
    """A quoted line break in the target's name (so predict still finds a, b and c)."""
    target = "y\nin metres"
    return write(tmp / "quoted.csv", frame().rename(columns={"y": target})), ["--target", target]


def _all_nan(tmp: Path) -> tuple[Path, list[str]]:
    return write(tmp / "nan.csv", frame().assign(c=np.nan)), ["--target", "y"]


def _all_nan_dropped(tmp: Path) -> tuple[Path, list[str]]:
    return write(tmp / "nan.csv", frame().assign(c=np.nan)), ["--target", "y", "--drop-na"]


def _text_feature(tmp: Path) -> tuple[Path, list[str]]:
    data = frame().assign(c=["red", "blue"] * (N_ROWS // 2))
    return write(tmp / "text.csv", data), ["--target", "y"]


def _huge(tmp: Path) -> tuple[Path, list[str]]:
    data = frame()
    data.loc[::3, "b"] = 1e300
    data.loc[::5, "y"] = -1e200
    return write(tmp / "huge.csv", data), ["--target", "y"]


def _negative_zero(tmp: Path) -> tuple[Path, list[str]]:
    data = frame()
    data.loc[::2, "c"] = -0.0
    return write(tmp / "zero.csv", data.to_csv(index=False).replace(",0.0,", ",-0.0,")), [
        "--target",
        "y",
    ]


def _duplicate_header(tmp: Path) -> tuple[Path, list[str]]:
    text = frame().to_csv(index=False).replace("a,b,c,y", "a,b,b,y", 1)
    return write(tmp / "dup.csv", text), ["--target", "y"]


def _good(name: str, *extra: str) -> Callable[[Path], tuple[Path, list[str]]]:
    def build(tmp: Path) -> tuple[Path, list[str]]:
        return write(tmp / name, frame()), ["--target", "y", *extra]

    return build


def _bytes(name: str, data: bytes) -> Callable[[Path], tuple[Path, list[str]]]:
    def build(tmp: Path) -> tuple[Path, list[str]]:
        return write(tmp / name, data), ["--target", "y"]

    return build


BINARY = bytes(np.random.default_rng(7).integers(0, 256, size=4000, dtype=np.uint8))
PENALTY = {"fit": "--alpha", "learn-metric": "--lam"}
# name: (build, expected exit code of fit / learn-metric, of predict); EITHER: 0 or 2
CASES: dict[str, tuple[Callable[[Path], tuple[Path, list[str]]], int | None, int | None]] = {
    "empty file": (_bytes("empty.csv", b""), 2, 2),
    "header only": (_bytes("header.csv", b"a,b,c,y\n"), 2, 2),
    "binary garbage": (_bytes("garbage.csv", BINARY), 2, 2),
    "not UTF-8": (_latin1, 2, 2),
    "very long line": (_long_line, 2, 2),
    "very long header name": (_long_header, 2, 2),
    "quoted newlines": (_quoted_newlines, 0, 0),
    "byte order mark": (_bom, 0, 0),
    "all-NaN column": (_all_nan, 2, 2),
    "all-NaN column, --drop-na": (_all_nan_dropped, 2, 2),
    "text feature column": (_text_feature, 2, 2),
    "huge numbers": (_huge, EITHER, EITHER),
    "negative zero": (_negative_zero, 0, 0),
    "duplicate headers": (_duplicate_header, 2, 2),
    "missing target": (_good("good.csv", "--target", "nope"), 2, 0),
    "--target naming a feature": (_good("good.csv", "--target", "a"), 0, 0),
    "unknown option": (_good("good.csv", "--bogus"), 2, 2),
    "--epsilon 0.7": (_good("good.csv", "--epsilon", "0.7"), 2, 2),
    "--epsilon -1": (_good("good.csv", "--epsilon", "-1"), 2, 2),
    "--epsilon nan": (_good("good.csv", "--epsilon", "nan"), 2, 2),
    "penalty 0": (_good("good.csv", "PENALTY", "0"), 2, 2),
    "penalty inf": (_good("good.csv", "PENALTY", "inf"), 2, 2),
    "penalty nan": (_good("good.csv", "PENALTY", "nan"), 2, 2),
    "path with spaces and unicode": (_good("my data ü é.csv"), 0, 0),
    "--out in a missing folder": (_good("good.csv", "--out", "missing/folder/out"), 2, 2),
}


def _argv(command: str, data: Path, extra: list[str], out: Path, model: Path) -> list[str]:
    """The command line of one case: extra arguments of the case, then --out (unless given)."""
    extra = [PENALTY.get(command, "--alpha") if arg == "PENALTY" else arg for arg in extra]
    if "--out" in extra:
        at = extra.index("--out")
        out = out.parent / extra[at + 1]
        extra = extra[:at] + extra[at + 2 :]
    if command == "predict":
        # predict takes no --target; keep the case's other arguments (bad ones must fail)
        while "--target" in extra:
            at = extra.index("--target")
            extra = extra[:at] + extra[at + 2 :]
        return [*predict_argv(model, data, out), *extra]
    tuning = ["--epsilon", "0.1"] if command == "fit" and "--epsilon" not in extra else []
    speed = ["--max-iter", "30"] if command == "learn-metric" else []
    return [command, str(data), *extra, *tuning, *speed, "--out", str(out), "--quiet"]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", ["fit", "learn-metric", "predict"])
def test_fault_injection(tmp_path, capsys, fitted, command, case):
    build, expected_training, expected_predict = CASES[case]
    expected = expected_predict if command == "predict" else expected_training
    work = tmp_path / "wörk dir" if "spaces" in case else tmp_path
    work.mkdir(exist_ok=True)
    data, extra = build(work)
    out = work / ("predictions ü.csv" if command == "predict" else "out é")
    argv = _argv(command, data, extra, out, fitted)
    before = tree(tmp_path)
    code, stdout, stderr = run(argv, capsys)
    assert "Traceback" not in stderr
    if expected is not None:
        assert code == expected, stderr
    if code == 0:
        assert stderr == "" and stdout == ""
        if command == "predict":
            written = pd.read_csv(out)
            assert len(written) == len(pd.read_csv(data, encoding="utf-8-sig"))
        else:
            names = {p.name for p in out.iterdir()}
            assert (FIT_OUTPUTS if command == "fit" else METRIC_OUTPUTS) <= names
            assert any(name.startswith("model.") for name in names)
        assert not any(Path(p).name.startswith(".") for p in tree(tmp_path) - before)
    else:
        assert_one_line_error(code, stderr, command)
        assert tree(tmp_path) == before
