"""The scripts in examples/ run (smoke tests) and print what their docstrings promise."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED_OUTPUT = {
    "any_estimator.py": "test RMSE oracle",
    "auto_epsilon.py": "identical predictions",
    "command_line.py": "component_1",
    "learned_metric.py": "rank of Sigma: 1",
    "network_training_loop.py": "corrupted rows left out by the estimator: 100%",
    "robust_grid_search.py": "trimmed RMSE",
}

NEED_TORCH = {"network_training_loop.py"}


def test_every_example_is_listed():
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted(EXPECTED_OUTPUT)


# The gallery of the documentation build runs every example too; the slowest one only with
# make test-slow here.
SLOW_EXAMPLES = {"any_estimator.py", "network_training_loop.py"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_EXAMPLES else name
        for name in sorted(EXPECTED_OUTPUT)
    ],
)
def test_example_runs(name, capsys, monkeypatch):
    if name in NEED_TORCH:
        pytest.importorskip("torch", reason="the example needs the optional PyTorch extra")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert EXPECTED_OUTPUT[name] in capsys.readouterr().out
