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
            names += [f"{full}.{method}" for method in _own_methods(obj)]
    return names


def _own_methods(cls: type) -> list[str]:
    """The public methods ``cls`` defines or inherits from a class of the package (not those of
    scikit-learn's mixins, whose docstrings are scikit-learn's)."""
    methods: dict[str, None] = {}
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] != "robustkernel":
            continue
        for name, member in vars(klass).items():
            # scikit-learn's available_if wraps a method in a descriptor (its ``fn``)
            if not name.startswith("_") and callable(getattr(member, "fn", member)):
                methods.setdefault(name)
    return list(methods)


def test_the_api_page_lists_the_package_exports():
    import robustkernel

    listed = {name.rsplit(".", 1)[-1] for name in documented_objects()}
    assert set(robustkernel.__all__) - {"__version__"} <= listed


@pytest.mark.parametrize("name", documented_objects())
def test_numpydoc_validation(name):
    errors = [f"{code}: {message}" for code, message in validate(name)["errors"]
              if code not in ALLOWED]
    assert not errors, "\n".join(errors)


def _documented_classes() -> list[str]:
    """The estimator and helper classes of the API page (not its warnings)."""
    return [
        name for name in documented_objects()
        if inspect.isclass(_resolve(name)) and not issubclass(_resolve(name), Warning)
    ]


def _resolve(name: str):
    """The object a dotted name of the API page names (a module's attribute, or a method)."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(name)


@pytest.mark.parametrize("name", sorted(set(_documented_classes())))
def test_documented_defaults_are_the_signature_defaults(name):
    """Each ``default=`` a class's docstring states is the default of its signature."""
    import ast

    from numpydoc.docscrape import ClassDoc

    cls = _resolve(name)
    signature = inspect.signature(cls)
    checked = 0
    for parameter in ClassDoc(cls)["Parameters"]:
        if "," in parameter.name or "default=" not in parameter.type:
            continue
        stated = parameter.type.split("default=", 1)[1].strip()
        try:
            value = ast.literal_eval(stated)
        except (ValueError, SyntaxError):
            continue  # a default written in words
        assert parameter.name in signature.parameters, parameter.name
        assert signature.parameters[parameter.name].default == value, (
            f"{name}({parameter.name}): docstring says {stated}, signature "
            f"{signature.parameters[parameter.name].default!r}"
        )
        checked += 1
    # every estimator with a default states it (OracleERM's one parameter has none)
    empty = inspect.Parameter.empty
    assert checked or all(p.default is empty for p in signature.parameters.values())
