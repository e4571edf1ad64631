"""
The command line on a messy CSV: fit, read the outlier report, predict new rows
===============================================================================

Writes a semicolon-separated table with 10% wrong targets into a temporary folder and runs
``robustkernel fit`` (epsilon estimated) and ``robustkernel predict`` on it, then
``robustkernel learn-metric`` on the rows the fit kept, as a shell user would.

Run: python examples/command_line.py
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from robustkernel.cli import main

rng = np.random.default_rng(0)
table = pd.DataFrame(rng.normal(size=(100, 3)), columns=["dose", "age", "weight"])
table["response"] = np.tanh(table["dose"]) + 0.05 * rng.normal(size=100)
table.loc[:9, "response"] = rng.normal(4.0, 1.0, size=10)  # 10% wrong targets

with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    table.to_csv(folder / "measurements.csv", sep=";", index=False)
    csv = str(folder / "measurements.csv")
    main(["fit", csv, "--target", "response", "--out", str(folder / "fit"), "--quiet"])
    outliers = pd.read_csv(folder / "fit" / "outliers.csv")
    print(f"flagged {outliers['flagged'].sum()} rows; the 10 wrong rows are rows 1-10:")
    print(outliers.nlargest(5, "outlier_score")[["row", "outlier_score", "response"]])
    print((folder / "fit" / "report.md").read_text().splitlines()[0])
    figure = plt.imread(folder / "fit" / "outliers.png")  # the report's plot of the scores

    predictions = str(folder / "predictions.csv")
    model = folder / "fit" / "model.skops"  # model.joblib, a pickle, when skops is missing
    trust = [] if model.exists() else ["--trust-pickle"]  # a pickle this script just wrote
    model = model if model.exists() else model.with_suffix(".joblib")
    main(["predict", str(model), csv, "--out", predictions, "--quiet", *trust])
    print(pd.read_csv(predictions).head(3))

    kept = outliers.loc[~outliers["flagged"], table.columns]
    kept.to_csv(folder / "kept.csv", index=False)
    metric = str(folder / "metric")
    main(["learn-metric", str(folder / "kept.csv"), "--target", "response", "--out", metric])
    print(pd.read_csv(folder / "metric" / "components.csv"))

fig, ax = plt.subplots(figsize=(6.5, 4.5))
ax.imshow(figure)
ax.set_axis_off()
ax.set_title("outliers.png from robustkernel fit's report")
fig.tight_layout()
plt.show()
