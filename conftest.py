"""Collection rules for the whole test run (tests/ and the doctests of src/)."""

from __future__ import annotations

import importlib.util

# The PyTorch backend is an optional extra: without torch its module cannot be imported, so its
# doctests are not collected (tests/test_torch_backend.py skips itself the same way).
TORCH_BACKEND = "src/robustkernel/subquantile/_torch_backend.py"
collect_ignore = [] if importlib.util.find_spec("torch") else [TORCH_BACKEND]
