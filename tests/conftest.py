"""Shared fixtures: small generated data sets with known corrupted rows."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from harness.data import hawkins_like  # noqa: F401  (the tests' Hawkins-like rows)

PAPERS = {"epsilon": 0.1, "alpha": 1.0, "gamma": None, "refine": None, "kernel": "rbf"}
"""The papers' fixed configuration of the Subquantile estimators (the defaults choose instead)."""


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str):
    """The module ``benchmarks/<name>.py``, imported from its file (its own ``harness``
    imports need ``benchmarks`` on the path: pytest's ``pythonpath`` setting has it)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses of a module with postponed annotations look it up
    spec.loader.exec_module(module)
    return module


def run_benchmark(name: str, out: Path, *args: str) -> str:
    """Run ``benchmarks/<name>.py *args --out out`` in a fresh interpreter (from the
    repository's root) and return the text it wrote there; its stderr on failure."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=BENCHMARKS.parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out.read_text()


def make_regression(n: int, seed: int, n_features: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Smooth regression function plus small noise; x uniform on [-2, 2]^d."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, n_features))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, -1]) + 0.1 * rng.normal(size=n)
    return X, y


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of the ``robustkernel`` command line called in-process."""
    from robustkernel.cli import main

    try:
        code = main(argv)
    except SystemExit as error:
        code = error.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def regression_data() -> tuple[np.ndarray, np.ndarray]:
    return make_regression(120, seed=0)


def _shared_dir() -> Path | None:
    """The benchmark CSV folder: $ROBUSTKERNEL_DATA, else ../shared/datasets beside the repo."""
    for candidate in (
        os.environ.get("ROBUSTKERNEL_DATA"),
        str(Path(__file__).resolve().parents[2] / "shared" / "datasets"),
    ):
        if candidate and (Path(candidate) / "MANIFEST.md").is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared data folder (never copied into the repository); skips the test without it."""
    path = _shared_dir()
    if path is None:
        pytest.skip(
            "shared data folder not found (../shared/datasets beside the repository, or "
            "$ROBUSTKERNEL_DATA, holding MANIFEST.md); the data are never committed"
        )
    return path


