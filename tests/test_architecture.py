"""docs/architecture.md matches the package tree, and the sources cite papers, not the tracker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "robustkernel"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def modules_in_tree() -> set[str]:
    """Every Python file of the package, relative to it, e.g. ``subquantile/_base.py``."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def modules_in_docs() -> set[str]:
    """Modules named by the page: the first column of the module table, and the top-level
    files of the tree drawing (lines ``├── name.py`` directly under ``robustkernel/``)."""
    table = set(re.findall(r"^\| `([\w/]+\.py)` \|", ARCHITECTURE, flags=re.M))
    top_level = set(re.findall(r"^[├└]── (\w+\.py) ", ARCHITECTURE, flags=re.M))
    return table | top_level


def test_every_module_is_documented():
    missing = sorted(modules_in_tree() - modules_in_docs())
    assert not missing, f"modules missing from docs/architecture.md: {missing}"


def test_every_documented_module_exists():
    stale = sorted(modules_in_docs() - modules_in_tree())
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_every_package_folder_is_drawn():
    folders = {path.parent.name for path in PACKAGE.rglob("__init__.py") if path.parent != PACKAGE}
    drawn = set(re.findall(r"^[├└]── (\w+)/ ", ARCHITECTURE, flags=re.M))
    drawn |= {"subq_tables"}  # a sub-package of reproduce/, in the module table
    assert folders <= drawn, f"package folders missing from the tree: {sorted(folders - drawn)}"


@pytest.mark.parametrize(
    "pattern",
    [r"\bSPEC\b", r"\b[Ii]ssues? #?\d+", r"\b[Pp]aper 00\d\b"],
    ids=["spec", "issue number", "paper file number"],
)
def test_sources_cite_papers_not_the_spec_or_issues(pattern):
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(pattern, line)
    ]
    assert not offenders, offenders
