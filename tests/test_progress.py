"""Progress of long fits (issue 63): the steps a fit with no arguments announces, the
estimators' bar under verbose, and the command line's bar."""

from __future__ import annotations

import numpy as np

from robustkernel import SubquantileKernelRegressor
from robustkernel._progress import listening, step, step_bar
from robustkernel.commands._common import fitting


def _table(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    y[:10] += 8.0
    return X, y


def test_steps_reach_the_listener_in_order_and_nothing_without_one():
    heard: list[str] = []
    step("before")  # no listener: nothing happens, nothing raises
    with listening(heard.append):
        step("one")
        with listening(lambda text: heard.append(text.upper())):
            step("two")
        step("three")
    step("after")
    assert heard == ["one", "TWO", "three"]


def test_a_default_fit_announces_its_steps_from_the_start_to_the_model():
    X, y = _table(200)
    heard: list[str] = []
    with listening(heard.append):
        model = SubquantileKernelRegressor().fit(X, y)
    assert heard[0] == "linear kernel: trimmed start"
    assert f"{model.kernel_} kernel: trimmed start" in heard
    folds = [text for text in heard if text.startswith("second stage: held-out fold")]
    assert folds[:5] == [f"second stage: held-out fold {k} of 5" for k in range(1, 6)]
    assert heard[-1] == f"{model.kernel_} kernel: the model on {model.inlier_mask_.sum()} kept rows"


def test_verbose_draws_a_bar_of_the_steps_and_verbose_0_says_nothing(capsys):
    X, y = _table(150)
    SubquantileKernelRegressor().fit(X, y)
    quiet = capsys.readouterr()
    assert quiet.out == "" and quiet.err == ""
    SubquantileKernelRegressor(verbose=1).fit(X, y)
    err = capsys.readouterr().err
    assert "SubQ kernel='auto'" in err
    assert "second stage: held-out fold 5 of 5" in err


def test_a_larger_table_says_its_start_runs_on_a_sample():
    X, y = _table(2100)
    heard: list[str] = []
    with listening(heard.append):
        SubquantileKernelRegressor(n_components=50).fit(X, y)
    assert heard[0] == "high-breakdown start on 1000 of the rows"
    assert heard[-1].endswith("the model on every one of 2100 rows")


class _Bar:
    """What the command line's bar is told."""

    def __init__(self) -> None:
        self.postfixes: list[str] = []

    def set_postfix_str(self, text: str) -> None:
        self.postfixes.append(text)


def test_the_command_lines_bar_shows_the_running_step():
    X, y = _table(120)
    bar = _Bar()
    with fitting(bar):
        SubquantileKernelRegressor().fit(X, y)
    assert bar.postfixes[0] == "fitting"
    assert "fitting: linear kernel: trimmed start" in bar.postfixes
    assert any(text.startswith("fitting: second stage") for text in bar.postfixes)


def test_an_inner_bar_passes_the_steps_on():
    heard: list[str] = []
    with listening(heard.append), step_bar("outer", enabled=True):
        step("inside")
    with listening(heard.append), step_bar("outer", enabled=False):
        step("not drawn")
    assert heard == ["inside", "not drawn"]
