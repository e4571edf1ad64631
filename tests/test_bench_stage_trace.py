"""benchmarks/bench_stage_trace.py: the stages it reports, in order, with counts that add up,
the same fit as the estimator's own, and the library's functions restored afterwards."""

from __future__ import annotations

import re

import numpy as np
from harness.planted import Cell, generate

from conftest import load_benchmark
from robustkernel import SubquantileKernelRegressor
from robustkernel.subquantile._automatic import high_breakdown as _high_breakdown

trace_script = load_benchmark("bench_stage_trace")


def test_the_trace_reports_each_stage_and_the_estimators_own_fit():
    cell = Cell("linear", "vertical", 0.2, 200)
    originals = (_high_breakdown.second_stage, _high_breakdown.reweighted)
    lines: list[str] = []
    rmse = trace_script.trace(cell, 0, report=lines.append)

    data = generate(cell, 0)
    model = SubquantileKernelRegressor().fit(data.X, data.y)
    expected = float(np.sqrt(np.mean((model.predict(data.X_test) - data.f_test) ** 2)))
    np.testing.assert_allclose(rmse, expected, rtol=1e-6)
    assert (_high_breakdown.second_stage, _high_breakdown.reweighted) == originals

    stages = [line.split(":")[0].strip() for line in lines]
    assert stages[0] == "linear LTS half" and "second stage" in stages
    assert stages.index("second stage") > stages.index("linear reweighted")
    second = next(line for line in lines if line.startswith("second stage"))
    far, far_total, wrong, wrong_total, correct, kept = map(
        int,
        re.search(
            r"far wrong kept +(\d+) of (\d+); wrong kept +(\d+) of (\d+); "
            r"correct flagged +(\d+); kept (\d+)",
            second,
        ).groups(),
    )
    assert far_total == int(data.far.sum()) and wrong_total == int(data.bad.sum()) == 40
    assert far <= wrong and kept == wrong + (200 - wrong_total - correct)
    # the linear family has no misfit rule: its second stage's rows are the model's
    assert kept == int(model.inlier_mask_.sum())
    assert wrong == int((model.inlier_mask_ & data.bad).sum())
