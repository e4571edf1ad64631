"""Every object of the API reference (docs/api.rst) and its public methods pass numpydoc's
validation for the sections they have.

Left out on purpose: missing See Also / Examples / extended summary (SA01, EX01, ES01: not every
method needs them) and RT02 (a single return value written ``name : type``, as scikit-learn
writes ``self : object``).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is in the dev extra").validate

ALLOWED = {"SA01", "EX01", "ES01", "RT02"}
API = Path(__file__).resolve().parents[1] / "docs" / "api.rst"


def documented_objects() -> list[str]:
    """Names listed in the autosummary blocks of docs/api.rst, with their public methods."""
    names = []
    for line in API.read_text().splitlines():
        entry = line.strip()
        if not line.startswith("   ") or not entry or entry.startswith(":"):
            continue
        full = f"robustkernel.{entry}"
        names.append(full)
        module, _, attribute = full.rpartition(".")
        obj = getattr(importlib.import_module(module), attribute)
        if inspect.isclass(obj):
            names += [
                f"{full}.{name}" for name, member in vars(obj).items()
                if not name.startswith("_") and callable(member)
            ]
    return names


def test_the_api_page_lists_the_package_exports():
    import robustkernel

    listed = {name.rsplit(".", 1)[-1] for name in documented_objects()}
    assert set(robustkernel.__all__) - {"__version__"} <= listed


@pytest.mark.parametrize("name", documented_objects())
def test_numpydoc_validation(name):
    errors = [f"{code}: {message}" for code, message in validate(name)["errors"]
              if code not in ALLOWED]
    assert not errors, "\n".join(errors)
