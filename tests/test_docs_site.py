"""docs/check_site.py finds what a broken documentation page shows (no sphinx needed)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

CHECK = runpy.run_path(str(Path(__file__).resolve().parents[1] / "docs" / "check_site.py"))


def write(folder: Path, name: str, body: str, title: str = "A page") -> Path:
    path = folder / name
    path.write_text(f"<html><head><title>{title}</title></head><body>{body}</body></html>")
    return path


def test_a_sound_page_has_no_problems(tmp_path):
    (tmp_path / "figure.png").write_bytes(b"png")
    page = write(
        tmp_path, "good.html",
        '<h1>Title</h1><p>Text</p><img src="figure.png"><pre>```code```</pre>'
        '<p><code>||x||</code> and <span class="math notranslate">\\(\\|x\\|\\)</span></p>'
        '<p><a class="reference internal" href="x.html"><code class="xref py">Model</code></a></p>',
    )
    assert CHECK["page_problems"](page) == []
    assert CHECK["page_problems"](page, needs_maths=True) == []


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


def test_a_gallery_example_without_a_figure_is_reported(tmp_path):
    (tmp_path / "auto_examples").mkdir()
    write(tmp_path / "auto_examples", "plain.html", "<h1>An example</h1><pre>print(1)</pre>")
    write(tmp_path / "auto_examples", "index.html", "<h1>Examples</h1>")
    problems = CHECK["site_problems"](tmp_path)
    assert "auto_examples/plain.html: a gallery example with no figure" in problems
    assert not any(p.startswith("auto_examples/index.html") for p in problems)


def test_an_empty_site_is_a_problem(tmp_path):
    assert CHECK["site_problems"](tmp_path) == [f"no HTML pages under {tmp_path}"]


def test_dead_references_ascii_maths_and_missing_headings_are_reported(tmp_path):
    page = write(
        tmp_path,
        "bad.html",
        '<p>Uses <code class="xref py py-class docutils"><span class="pre">Lost</span></code>,'
        " minimizes sum_{i in S} loss_i + alpha ||f||_H^2 and $$x$$</p>",
    )
    problems = CHECK["page_problems"](page, needs_maths=True)
    assert "no <h1> heading" in problems
    assert "a reference with no target shows as text: 'Lost'" in problems
    assert any("norm written in ASCII" in p for p in problems)
    assert any("sum written in ASCII" in p for p in problems)
    assert any("unrendered dollar maths" in p for p in problems)
    assert any("no rendered maths" in p for p in problems)


def test_every_public_estimator_page_must_carry_maths(tmp_path):
    pages = CHECK["math_pages"](tmp_path)
    assert "user_guide.html" in pages
    assert "generated/robustkernel.SubquantileKernelRegressor.html" in pages
    assert "generated/robustkernel.MetricKernelRidgeCV.html" in pages
    assert "generated/robustkernel.baselines.CRRKernelRegressor.html" in pages
    assert "generated/robustkernel.metric_kernel_ridge_path.html" not in pages  # a function
    missing = CHECK["missing_math_pages"](tmp_path)
    assert missing == [f"{page}: not built" for page in pages]


@pytest.mark.skipif(CHECK["browser"]() is None, reason="needs Chromium (apt-get install chromium)")
def test_a_heading_cut_off_in_the_browser_is_reported(tmp_path):
    narrow = 'style="width: 120px; overflow: hidden; white-space: nowrap"'
    cut = write(tmp_path, "cut.html", f"<h1 {narrow}>SubquantileKernelClassifier and more</h1>")
    whole = write(tmp_path, "whole.html", "<h1>SubquantileKernelClassifier</h1>")
    assert CHECK["cut_off_text"](CHECK["browser"](), cut) == [
        "h1 SubquantileKernelClassifier and more"
    ]
    assert CHECK["cut_off_text"](CHECK["browser"](), whole) == []
    wide = write(
        tmp_path, "wide.html",
        '<div class="pst-scrollable-table-container" style="width: 100px; overflow-x: auto">'
        "<table><tr><td>aVeryLongCellThatCannotWrap</td> <td>another</td></tr></table></div>",
    )
    assert CHECK["cut_off_text"](CHECK["browser"](), wide) == [
        "div aVeryLongCellThatCannotWrap another"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.html", "whole.html", "wide.html"]


def test_references_into_other_projects_resolve_offline_and_misspellings_do_not():
    links = runpy.run_path(
        str(Path(__file__).resolve().parents[1] / "docs" / "_ext" / "external_links.py")
    )
    url = links["external_url"]
    sklearn = "https://scikit-learn.org/stable/"
    assert url("sklearn.svm.SVC") == f"{sklearn}modules/generated/sklearn.svm.SVC.html"
    assert url("sklearn.svm.SVC.fit") == (
        f"{sklearn}modules/generated/sklearn.svm.SVC.html#sklearn.svm.SVC.fit"
    )
    assert url("sklearn.model_selection") == f"{sklearn}api/sklearn.model_selection.html"
    numpy = "https://numpy.org/doc/stable/reference/generated/"
    assert url("numpy.ndarray") == f"{numpy}numpy.ndarray.html"
    assert url("ValueError") == "https://docs.python.org/3/library/exceptions.html#ValueError"
    assert url("int") == "https://docs.python.org/3/library/functions.html#int"
    assert url("pathlib.Path") == "https://docs.python.org/3/library/pathlib.html#pathlib.Path"
    assert url("sklearn.svm.SVCC") is None  # misspelt: stays unresolved and fails the build
    assert url("robustkernel.Nothing") is None
    assert url("notapackage.thing") is None
