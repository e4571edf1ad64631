"""docs/check_site.py finds what a broken documentation page shows (no sphinx needed)."""

from __future__ import annotations

import runpy
from pathlib import Path

CHECK = runpy.run_path(str(Path(__file__).resolve().parents[1] / "docs" / "check_site.py"))


def write(folder: Path, name: str, body: str, title: str = "A page") -> Path:
    path = folder / name
    path.write_text(f"<html><head><title>{title}</title></head><body>{body}</body></html>")
    return path


def test_a_sound_page_has_no_problems(tmp_path):
    (tmp_path / "figure.png").write_bytes(b"png")
    page = write(tmp_path, "good.html", '<p>Text</p><img src="figure.png"><pre>```code```</pre>')
    assert CHECK["page_problems"](page) == []


def test_missing_images_titles_and_raw_markup_are_reported(tmp_path):
    page = write(
        tmp_path,
        "bad.html",
        '<img src="_images/missing.png"><p>See :class:`Model` and</p>\n<p>```python</p>',
        title=" ",
    )
    problems = CHECK["page_problems"](page)
    assert "no <title>" in problems
    assert "missing image _images/missing.png" in problems
    assert any("reST role" in p for p in problems)
    assert any("Markdown code fence" in p for p in problems)


def test_an_empty_site_is_a_problem(tmp_path):
    assert CHECK["site_problems"](tmp_path) == [f"no HTML pages under {tmp_path}"]
