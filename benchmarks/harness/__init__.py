"""The shared parts of the benchmark scripts, so that no script imports another.

* ``data``: the data sets of the robustness race;
* ``attacks``: its attacks, splits and cells (and the per-split options of the label-noise
  scripts);
* ``peers``: the methods as their users run them (scikit-learn, cleanlab, statsmodels, the
  library's estimators), the oracles, the rows a method flags;
* ``race``: one run, the grid of runs and its cache fingerprints;
* ``tables``: the race's summaries;
* ``report``: Markdown tables, BENCHMARKS.md sections, the machine's CPU and load;
* ``rscript``: R's robustbase (ltsReg, lmrob) through ``Rscript``, and its output's parser;
* ``realdata``: the real tables of bench_real_tables.py, their sources and cleaning.

The scripts run as ``python benchmarks/bench_<name>.py``, whose folder Python puts first on the
import path: ``import harness`` needs nothing more.
"""
