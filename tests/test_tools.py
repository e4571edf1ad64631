"""The maintainers' tools in tools/ (run by hand, not part of the package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = '''"""Module docstring,
two lines."""

X = "not a docstring"


class A:
    """Class docstring."""

    __doc__ = (
        "assembled" + "docstring"
    )

    def f(self):
        """Method docstring."""
        y = "kept"
        return y


def g():
    return 1
'''


def test_strip_docstrings_blanks_exactly_the_docstrings(tmp_path):
    strip = _load("strip_docstrings")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "m.py").write_text(SOURCE)
    assert strip.strip_tree(tmp_path / "src", tmp_path / "out") == 1
    before = SOURCE.splitlines()
    after = (tmp_path / "out" / "pkg" / "m.py").read_text().splitlines()
    assert len(after) == len(before)  # line numbers stay those of the source
    blanked = {number + 1 for number, line in enumerate(after) if line != before[number]}
    assert blanked == {1, 2, 8, 10, 11, 12, 15}
    assert all(after[number - 1] == "" for number in blanked)
    with pytest.raises(ValueError, match="destination must differ"):
        strip.strip_tree(tmp_path / "src", tmp_path / "src")
