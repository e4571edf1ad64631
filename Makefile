# Every target creates (or reuses) a local virtual environment in .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench bench-peers reproduce clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/robustkernel demo --out demo_output

# The tests solve small systems: one BLAS thread per process is faster, and much faster on a
# shared machine where idle BLAS threads spin.
test: $(STAMP)
	$(BIN)/ruff check .
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -q

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

reproduce: $(STAMP)
	$(BIN)/robustkernel reproduce all --n-jobs -1

clean:
	rm -rf $(VENV) demo_output .pytest_cache
