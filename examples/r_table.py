"""
A table exported from R, end to end: stack loss, its four known outliers and their evidence
============================================================================================

R's ``write.csv(stackloss, "stackloss.csv")`` writes the row names as an unnamed first column
(header ``""``, rows 1 to 21). This script writes the data set that way (from statsmodels'
copy of R's ``stackloss``: 21 days of a nitric acid plant, Brownlee 1965), runs
``robustkernel fit`` on the file with no options but the target, as a new user would, and reads
the outputs: the report says the index column was left out; ``outliers.csv`` holds every row's
evidence (residual and fitted value in the target's units, a robust z, a p-value, the distance
in x to the kept rows and the kind of flag, "wrong y" or "unusual x"). The literature's
outliers are rows 1, 3, 4 and 21 (Rousseeuw & Leroy 1987, ch. 2, from least median of squares;
R's ``ltsReg`` flags the same four).

Run: python examples/r_table.py
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.api as sm

from robustkernel.cli import main

data = sm.datasets.stackloss.load_pandas().data
data.columns = ["stack.loss", "Air.Flow", "Water.Temp", "Acid.Conc."]  # R's names

with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    csv = folder / "stackloss.csv"
    # as write.csv writes it: quoted header with an empty first name, quoted row names 1..21
    lines = ['"",' + ",".join(f'"{name}"' for name in data.columns)]
    lines += [
        f'"{row}",' + ",".join(f"{value:g}" for value in values)
        for row, values in enumerate(data.to_numpy(), start=1)
    ]
    csv.write_text("\n".join(lines) + "\n")
    print(csv.read_text().splitlines()[:3])

    main(["fit", str(csv), "--target", "stack.loss", "--out", str(folder / "fit"), "--quiet"])
    report = (folder / "fit" / "report.md").read_text()
    print(next(line for line in report.splitlines() if "index" in line.lower()))
    rows = pd.read_csv(folder / "fit" / "outliers.csv")

flagged = rows[rows["flagged"]]  # row: from 1 at the first line after the header (R's names)
print(f"flagged rows: {flagged['row'].tolist()}")
columns = ["row", "stack.loss", "fitted", "residual", "robust_z", "pvalue", "x_distance", "kind"]
print(rows.loc[rows["row"].isin([1, 2, 3, 4, 21]), [*columns, "flagged"]].to_string())

# %%
# Read a flag from its evidence: the fitted value and the residual are in the target's units
# (tenths of a percent of the ammonia lost), the robust z is the p-value's normal quantile,
# signed as the residual; "wrong y" says the row's x is among the kept rows' (its target is
# what does not fit), "unusual x" that the fit would extrapolate there. A kept row's evidence
# is how well the *other* rows predict it: row 2, a day of high air flow like rows 1 and 3, is
# kept by the fit that includes it, but held out, with rows 1 and 3 flagged, no kept row is
# left at its air flow (x-distance 2.8, just under the 3 of "unusual x") and its residual is
# as large as row 3's. R's ``ltsReg`` keeps it too.
names = rows["row"]
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
kept = ~rows["flagged"]
left.scatter(rows["fitted"][kept], rows["stack.loss"][kept], c="0.5", label="kept rows")
left.scatter(
    rows["fitted"][~kept], rows["stack.loss"][~kept], c="tab:red", label="flagged rows"
)
for _, row in flagged.iterrows():
    left.annotate(
        f"row {row['row']}", (row["fitted"], row["stack.loss"]), textcoords="offset points",
        xytext=(5, 3), fontsize=8,
    )
line = np.linspace(rows["fitted"].min(), rows["fitted"].max(), 2)
left.plot(line, line, color="k", lw=0.8, label="observed = fitted")
left.set_xlabel("fitted stack loss (held out for kept rows)")
left.set_ylabel("observed stack loss")
left.legend(fontsize=8)
left.set_title("stackloss.csv: observed against fitted")

colours = np.where(rows["flagged"], "tab:red", "0.6")
right.bar(names, rows["robust_z"], color=colours)
right.axhline(0.0, color="k", lw=0.8)
right.set_xticks(names)
right.tick_params(axis="x", labelsize=7)
right.set_xlabel("row (R's row name)")
right.set_ylabel("robust z of the residual")
right.set_title("evidence per row (red: flagged, each 'wrong y')")
fig.tight_layout()
plt.show()
