"""Copy a tree's Python files with their docstrings blanked, to count duplicated code alone.

The ``duplicates`` command pairs runs of six or more alike lines; numpydoc sections repeat by
design (every estimator documents ``X``, ``y``, ``sample_weight``), so the code count of issue
49 is taken with docstrings aside::

    python tools/strip_docstrings.py src /tmp/nodoc/src
    duplicates --repo /tmp/nodoc --most 200

Blanked (each line replaced by an empty one, so line numbers stay those of the source): the
first string statement of a module, class or function, and every ``__doc__ = ...`` assignment
(docstrings assembled from shared parts, as the kernel baselines' are). Everything else is
copied as it is. The destination folder is emptied first.
"""

from __future__ import annotations

import argparse
import ast
import shutil
from pathlib import Path


def docstring_lines(tree: ast.Module) -> set[int]:
    """The 0-based line numbers of the docstrings of ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno - 1, first.end_lineno or first.lineno))
        if isinstance(node, ast.Assign) and any(
            (isinstance(target, ast.Name) and target.id == "__doc__")
            or (isinstance(target, ast.Attribute) and target.attr == "__doc__")
            for target in node.targets
        ):
            lines.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    return lines


def strip_tree(source: Path, destination: Path) -> int:
    """Write every ``*.py`` file below ``source`` to ``destination`` with its docstrings
    blanked; return the number of files written."""
    if destination.resolve() == source.resolve():
        raise ValueError("destination must differ from source (the copy is rewritten)")
    shutil.rmtree(destination, ignore_errors=True)
    count = 0
    for path in sorted(source.rglob("*.py")):
        text = path.read_text(encoding="utf-8").splitlines()
        blank = docstring_lines(ast.parse("\n".join(text), filename=str(path)))
        kept = ["" if number in blank else line for number, line in enumerate(text)]
        target = destination / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(kept) + "\n", encoding="utf-8")
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="folder to copy (e.g. src)")
    parser.add_argument("destination", type=Path, help="folder to write (emptied first)")
    args = parser.parse_args()
    print(f"{strip_tree(args.source, args.destination)} files written to {args.destination}")


if __name__ == "__main__":
    main()
