"""Markdown helpers shared by the demo, the benchmarks and the reproduction command."""

from __future__ import annotations

import pandas as pd
import pytest

from robustkernel._report import cpu_description, markdown_table, replace_markdown_section


def test_markdown_table_escapes_pipes_and_keeps_rows():
    text = markdown_table(pd.DataFrame({"a": [1, 2], "b": ["x|y", None]}))
    lines = text.strip().splitlines()
    assert lines[0] == "| a | b |"
    assert len(lines) == 4
    assert "x\\|y" in lines[2]


def test_markdown_table_escapes_pipes_in_the_header():
    text = markdown_table(pd.DataFrame({"||P - Q||_F": [0.5]}))
    header = text.splitlines()[0]
    assert header == "| \\|\\|P - Q\\|\\|_F |"
    assert header.replace("\\|", "").count("|") == 2  # one column: only the outer pipes


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
