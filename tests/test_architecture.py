"""docs/architecture.md matches the package tree, the sources cite papers, not the tracker, and
imports between the package's units point down the layer table."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "robustkernel"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def modules_in_tree() -> set[str]:
    """Every Python file of the package, relative to it, e.g. ``trimming/selection.py``."""
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
    drawn = set(re.findall(r"^[│ ]*[├└]── (\w+)/ ", ARCHITECTURE, flags=re.M))
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


# -- import direction ------------------------------------------------------------------------
#
# A unit is a sub-package folder (``subquantile``) or a top-level module (``_version``) of
# ``robustkernel``; ``__init__`` is the package's own ``__init__.py``. A module may import from
# its own unit (siblings of one sub-package import each other freely) or from a unit of lower
# rank, never upward and never sideways: a new unit fails ``test_every_unit_has_a_layer`` until
# it is placed here (and in docs/architecture.md).
LAYERS: dict[str, int] = {
    # leaves: import nothing from the package
    "_version": 0,
    "_fractions": 0,
    "_atomic": 0,
    "_memory": 0,
    "_report": 0,
    "_torch_device": 0,
    "_delegation": 0,
    "_progress": 0,
    # the version stamp of every estimator's pickled state (reads _version)
    "_version_stamp": 1,
    # the kernel model that SubQ and the baselines share
    "_kernel_model": 2,
    # the trimming core every engine runs on
    "trimming": 3,
    # engine 1
    "subquantile": 4,
    # built on SubQ: engine 2 (its robust start and trimmed fits use SubquantileKernelRegressor),
    # the meta-estimators, the networks, the peers
    "metric_kernel_ridge": 5,
    "meta": 5,
    "nn": 5,
    "baselines": 5,
    # around the estimators: data, contamination, scores, model files
    "corruption": 6,
    "metrics": 6,
    "persistence": 6,
    "datasets": 6,
    # the papers' tables (the `reproduce` command runs them)
    "reproduce": 7,
    # the command line: subcommands, then the entry point
    "commands": 8,
    "cli": 9,
    # the public package: nothing inside imports it
    "__init__": 10,
}

NAME = PACKAGE.name


def module_name(path: Path) -> str:
    """``robustkernel.trimming.selection`` for ``trimming/selection.py``; a package's
    ``__init__.py`` is the package itself (``robustkernel.subquantile``)."""
    parts = (NAME, *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def package_modules() -> dict[str, Path]:
    return {
        module_name(path): path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts
    }


def imported_modules(path: Path) -> set[str]:
    """Every package module that the file at ``path`` imports, anywhere in it (at the top, in a
    function, lazily). ``from . import name`` counts as importing the submodule ``name`` when there
    is one, otherwise the package it names; ``from .a.b import c`` imports ``a.b``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules = package_modules()
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                for alias in node.names
            ]
        else:
            continue
        found |= {target for target in targets if target == NAME or target.startswith(NAME + ".")}
    return found


def unit(module: str) -> str:
    """The layer-table key of a module: its first name under the package."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


@cache
def import_edges() -> frozenset[tuple[str, str]]:
    """(importer, imported) for every import of a package module by a package module."""
    return frozenset(
        (name, target)
        for name, path in package_modules().items()
        for target in imported_modules(path)
        if target != name
    )


def test_import_collector_sees_relative_absolute_and_lazy_imports():
    edges = import_edges()
    assert ("robustkernel.commands._fit_report", "robustkernel._report") in edges  # from .. import
    assert ("robustkernel._version_stamp", "robustkernel._version") in edges  # from ._version
    # inside a function: the lazy load of the PyTorch backend
    lazy = (
        "robustkernel.subquantile._fit.core",
        "robustkernel.subquantile._backends.torch_backend",
    )
    assert lazy in edges
    assert ("robustkernel.metric_kernel_ridge._cv", "robustkernel.subquantile") in edges


def import_cycles(edges: frozenset[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module of the import graph ``edges``
    (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    graph: dict[str, list[str]] = {}
    for importer, imported in sorted(edges):
        graph.setdefault(importer, []).append(imported)
        graph.setdefault(imported, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(cycles)


def test_the_cycle_finder_finds_cycles_and_only_them():
    edges = frozenset(
        {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")}
    )
    assert import_cycles(edges) == [["a", "b", "c"], ["d", "e"]]
    assert import_cycles(frozenset({("a", "b"), ("b", "c"), ("a", "c")})) == []


def test_the_import_graph_holds_type_checking_imports():
    # commands/_predictions.py imports Table from _tabular only under TYPE_CHECKING
    edge = ("robustkernel.commands._predictions", "robustkernel.commands._tabular")
    assert edge in import_edges()


def test_no_import_cycle():
    """No module imports itself through others, type-hint imports included (a loop of
    TYPE_CHECKING imports still says the modules are not layered)."""
    assert import_cycles(import_edges()) == []


def test_every_unit_has_a_layer():
    units = {unit(name) for name in package_modules()}
    unplaced = sorted(units - LAYERS.keys())
    assert not unplaced, f"units missing from LAYERS in tests/test_architecture.py: {unplaced}"
    stale = sorted(LAYERS.keys() - units)
    assert not stale, f"LAYERS names units that do not exist: {stale}"


def test_imports_point_down_the_layers():
    upward = sorted(
        f"{importer} ({unit(importer)}, rank {LAYERS.get(unit(importer))}) imports {imported} "
        f"({unit(imported)}, rank {LAYERS.get(unit(imported))})"
        for importer, imported in import_edges()
        if unit(importer) != unit(imported)
        and (
            unit(importer) not in LAYERS
            or unit(imported) not in LAYERS
            or LAYERS[unit(imported)] >= LAYERS[unit(importer)]
        )
    )
    assert not upward, "imports that do not point to a lower layer:\n" + "\n".join(upward)


def test_nothing_inside_imports_the_package_init():
    offenders = sorted(importer for importer, imported in import_edges() if imported == NAME)
    assert not offenders, (
        f"modules importing the package __init__ (import a submodule): {offenders}"
    )


def test_the_version_module_is_a_leaf():
    assert not imported_modules(PACKAGE / "_version.py")


def test_metric_kernel_ridge_builds_on_subquantile_never_the_reverse():
    edges = import_edges()
    assert any(
        unit(importer) == "metric_kernel_ridge" and unit(imported) == "subquantile"
        for importer, imported in edges
    ), "metric_kernel_ridge no longer uses SubquantileKernelRegressor: update LAYERS and this test"
    reverse = sorted(
        (importer, imported)
        for importer, imported in edges
        if unit(importer) == "subquantile" and unit(imported) == "metric_kernel_ridge"
    )
    assert not reverse, f"subquantile imports metric_kernel_ridge: {reverse}"


def test_outside_subquantile_only_its_init_is_imported():
    """The SubQ engine's private modules are its own: other units import the names its
    ``__init__`` exports (the engine's face), so the engine can move code between its modules
    without breaking them."""
    private = sorted(
        f"{importer} imports {imported}"
        for importer, imported in import_edges()
        if unit(importer) != "subquantile"
        and unit(imported) == "subquantile"
        and imported != f"{NAME}.subquantile"
    )
    assert not private, "imports of subquantile's private modules:\n" + "\n".join(private)


# Inside the SubQ engine, the same rule one level down: a part is a sub-package of
# ``subquantile/`` or one of the few modules at its top, and imports only parts of lower rank.
SUBQUANTILE = f"{NAME}.subquantile"
SUBQUANTILE_LAYERS: dict[str, int] = {
    # the objective on a fixed model space, the papers' solvers, exact refits, the M-step
    "_solve": 0,
    # what every backend returns to the estimator
    "_result": 0,
    # the automatic configuration's stages: units, components, alpha / gamma, epsilon, the
    # high-breakdown start, the second stage
    "_automatic": 1,
    # the rules of each task (regression, classification); the prediction intervals
    "_tasks": 2,
    "_intervals": 2,
    # the one validation of a fit's parameters
    "_settings": 3,
    # the Dask and GPU backends
    "_backends": 4,
    # the in-memory fit: weights, routes, stages
    "_fit": 5,
    # the estimators
    "_estimators": 6,
    # the engine's face (subquantile/__init__.py)
    "__init__": 7,
}
TOP_MODULES_OF_SUBQUANTILE = 4  # besides __init__.py


def subquantile_part(name: str) -> str | None:
    """The part of ``subquantile/`` that the module ``name`` belongs to (None outside it)."""
    if name == SUBQUANTILE:
        return "__init__"
    if not name.startswith(SUBQUANTILE + "."):
        return None
    return name[len(SUBQUANTILE) + 1:].split(".")[0]


def test_every_part_of_subquantile_has_a_layer():
    parts = {subquantile_part(name) for name in package_modules()} - {None}
    assert parts == SUBQUANTILE_LAYERS.keys(), (
        f"missing from SUBQUANTILE_LAYERS: {sorted(parts - SUBQUANTILE_LAYERS.keys())}; "
        f"stale: {sorted(SUBQUANTILE_LAYERS.keys() - parts)}"
    )


def test_imports_inside_subquantile_point_down_its_layers():
    upward = sorted(
        f"{importer} ({subquantile_part(importer)}) imports {imported} "
        f"({subquantile_part(imported)})"
        for importer, imported in import_edges()
        if subquantile_part(importer) is not None
        and subquantile_part(imported) is not None
        and subquantile_part(importer) != subquantile_part(imported)
        and SUBQUANTILE_LAYERS[subquantile_part(imported)]
        >= SUBQUANTILE_LAYERS[subquantile_part(importer)]
    )
    assert not upward, "imports that do not point to a lower layer:\n" + "\n".join(upward)


def test_few_modules_at_the_top_of_subquantile():
    top = sorted(
        path.name for path in (PACKAGE / "subquantile").glob("*.py") if path.name != "__init__.py"
    )
    assert len(top) <= TOP_MODULES_OF_SUBQUANTILE, top


def test_the_subquantile_layer_check_can_fail():
    # an import running back up, from the solvers to the in-memory fit
    importer, imported = f"{SUBQUANTILE}._solve.solvers", f"{SUBQUANTILE}._fit.in_memory"
    assert SUBQUANTILE_LAYERS[subquantile_part(imported)] >= SUBQUANTILE_LAYERS[
        subquantile_part(importer)
    ]


def test_one_smallest_and_one_round_limit():
    """``smallest`` and ``MAX_ROUNDS`` are defined once, in the trimming core."""
    definitions = {"smallest": [], "MAX_ROUNDS": []}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = (
                [node.name] if isinstance(node, ast.FunctionDef)
                else [t.id for t in node.targets if isinstance(t, ast.Name)]
                if isinstance(node, ast.Assign) else []
            )
            for name in set(names) & definitions.keys():
                definitions[name].append(path.relative_to(PACKAGE).as_posix())
    assert definitions == {
        "smallest": ["trimming/selection.py"],
        "MAX_ROUNDS": ["trimming/rules.py"],
    }


# -- size ------------------------------------------------------------------------------------

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def code_lines(source: str) -> tuple[set[int], ast.Module]:
    """The numbers of the lines that hold code (not blank, not only a comment, not in a
    docstring), and the parsed module."""
    tree = ast.parse(source)
    documentation = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                documentation |= set(range(first.lineno, first.end_lineno + 1))
    skipped = {
        tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            lines |= set(range(token.start[0], token.end[0] + 1)) - documentation
    return lines, tree


def test_code_lines_count_code_only():
    source = (
        '"""Doc\nstring."""\n\n# a comment\nx = 1\n\n\n'
        'def f():\n    """Doc."""\n    return (\n        x\n    )\n'
    )
    lines, _ = code_lines(source)
    assert lines == {5, 8, 10, 11, 12}


def test_modules_and_functions_stay_small():
    """No module over ``MAX_MODULE_LINES`` lines of code, no function over
    ``MAX_FUNCTION_LINES`` (docstrings, comments and blank lines aside)."""
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines, tree = code_lines(path.read_text())
        name = path.relative_to(PACKAGE).as_posix()
        if len(lines) > MAX_MODULE_LINES:
            too_long.append(f"{name}: {len(lines)} lines of code")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                count = sum(node.lineno <= line <= node.end_lineno for line in lines)
                if count > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {count} lines of code")
    assert not too_long, "\n".join(too_long)
