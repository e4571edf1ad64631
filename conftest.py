"""Collection rules for the whole test run (tests/ and the doctests of src/)."""

from __future__ import annotations

import importlib.util

# PyTorch is an optional extra: without torch the device backend cannot be imported and the
# networks' examples cannot run, so their doctests are not collected (tests/test_torch_backend.py
# and tests/test_networks.py skip themselves the same way).
NEED_TORCH = [
    "src/robustkernel/subquantile/_torch_backend.py",
    "src/robustkernel/nn/_loss.py",
    "src/robustkernel/nn/_mlp.py",
]
collect_ignore = [] if importlib.util.find_spec("torch") else NEED_TORCH
