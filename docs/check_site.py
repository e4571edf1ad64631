"""Check the built documentation site: every page has a title and a heading, no image is missing,
no reference is dead text, no raw markup shows, the pages that state formulas carry rendered maths,
and (with ``--screenshots``) the landing, install, estimator-choice, API and two gallery pages
render in headless Chromium to a non-blank picture with no heading or menu entry cut off.

    python docs/check_site.py docs/_build/html --screenshots docs/_build/screenshots

Exit code 1 with one line per problem, 0 when the site is sound.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

# Text that only shows when markup was not rendered: reST roles and directives, Markdown fences,
# tables and emphasis, an unsubstituted numpydoc section underline.
RAW_MARKUP = [
    (re.compile(r":(class|func|meth|attr|mod|ref):`"), "a reST role"),
    (re.compile(r"^\s*\.\. [a-z-]+::", re.M), "a reST directive"),
    (re.compile(r"```"), "a Markdown code fence"),
    (re.compile(r"^\s*\|[-: |]+\|\s*$", re.M), "a Markdown table rule"),
    (re.compile(r"\|\|"), "a norm written in ASCII (||)"),
    (re.compile(r"\bsum_\{"), "a sum written in ASCII (sum_{)"),
    (re.compile(r"\$\$"), "unrendered dollar maths ($$)"),
]
SCREENSHOT_PAGES = {
    "landing": "index.html",
    "install": "install.html",
    "choosing": "choosing.html",
    "api": "generated/robustkernel.SubquantileKernelRegressor.html",
    "gallery": "auto_examples/auto_epsilon.html",
    "classification": "auto_examples/label_noise.html",
}
# Pages that state formulas: the user guide and every estimator's API page must show maths that
# MathJax renders (an element of class "math"), not formulas written in ASCII.
MATH_PAGES = ["user_guide.html"]
# Pages sphinx-gallery writes into auto_examples/ that are not examples.
GALLERY_PAGES_NOT_EXAMPLES = ("index.html", "sg_execution_times.html")
# Elements that never hold the page's prose.
NOT_PROSE = ("script", "style", "pre", "code", "textarea")
# Elements with no end tag.
VOID = ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr")


class _Page(HTMLParser):
    """The title, the headings, the image sources, the visible prose (outside code, scripts,
    styles and maths), the number of rendered maths elements, and the cross-references that
    are not links (Sphinx renders a reference it could not resolve as an ``xref`` element
    outside any ``<a>``)."""

    def __init__(self) -> None:
        super().__init__()
        self.title, self.images, self.text, self.dead = "", [], [], []
        self.headings = self.maths = 0
        self._open: list[tuple[str, bool]] = []  # each open element: tag, hides its text
        self._in_title = False
        self._links = self._hidden = 0
        self._dead_text: list[str] | None = None
        self._dead_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "title":
            self._in_title = True
        if tag == "h1":
            self.headings += 1
        if tag == "img" and dict(attrs).get("src"):
            self.images.append(dict(attrs)["src"])
        if tag in VOID:
            return
        if "math" in classes:
            self.maths += 1
        if tag == "a":
            self._links += 1
        if "xref" in classes and not self._links and self._dead_text is None:
            self._dead_text, self._dead_depth = [], len(self._open)
        hides = tag in NOT_PROSE or "math" in classes
        self._hidden += hides
        self._open.append((tag, hides))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in VOID or not any(name == tag for name, _ in self._open):
            return
        while self._open:  # close up to the matching element (HTML allows omitted end tags)
            name, hides = self._open.pop()
            self._hidden -= hides
            if name == "a":
                self._links -= 1
            if self._dead_text is not None and len(self._open) == self._dead_depth:
                self.dead.append("".join(self._dead_text).strip())
                self._dead_text = None
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._dead_text is not None:
            self._dead_text.append(data)
        if not self._hidden:
            self.text.append(data)


def page_problems(path: Path, needs_maths: bool = False, needs_figure: bool = False) -> list[str]:
    """What is wrong with one built HTML page; ``needs_maths``: the page must show rendered
    maths; ``needs_figure``: it must show an image (a gallery example's figure)."""
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    problems = []
    if needs_figure and not page.images:
        problems.append("a gallery example with no figure")
    if not page.title.strip():
        problems.append("no <title>")
    if not page.headings:
        problems.append("no <h1> heading")
    for name in sorted(set(page.dead)):
        problems.append(f"a reference with no target shows as text: {name!r}")
    if needs_maths and not page.maths:
        problems.append("no rendered maths (formulas must be $...$ / :math:, not ASCII)")
    for source in page.images:
        parsed = urlparse(source)
        if parsed.scheme in ("http", "https", "data"):
            continue
        if not (path.parent / unquote(parsed.path)).is_file():
            problems.append(f"missing image {source}")
    text = "".join(page.text)
    for pattern, what in RAW_MARKUP:
        match = pattern.search(text)
        if match:
            problems.append(f"{what} shows as text: {match.group(0).strip()!r}")
    return problems


def site_problems(root: Path) -> list[str]:
    """Problems of every page under ``root`` (the search page, the index and the theme's
    template fragments in ``_static`` excepted); every gallery example must show a figure."""
    skipped = ("search.html", "genindex.html")
    pages = sorted(
        p for p in root.rglob("*.html")
        if p.name not in skipped and "_static" not in p.relative_to(root).parts
    )
    if not pages:
        return [f"no HTML pages under {root}"]
    maths = set(math_pages(root))
    problems = []
    for p in pages:
        name = p.relative_to(root).as_posix()
        example = name.startswith("auto_examples/") and p.name not in GALLERY_PAGES_NOT_EXAMPLES
        problems += [
            f"{name}: {problem}"
            for problem in page_problems(p, needs_maths=name in maths, needs_figure=example)
        ]
    return problems


def math_pages(root: Path) -> list[str]:
    """``MATH_PAGES`` and the API page of every public estimator (a scikit-learn estimator
    class exported by robustkernel or its ``baselines``); a missing page is a problem of
    its own (``missing_math_pages``)."""
    from sklearn.base import BaseEstimator

    import robustkernel
    from robustkernel import baselines

    pages = list(MATH_PAGES)
    for module in (robustkernel, baselines):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseEstimator):
                prefix = "" if module is robustkernel else "baselines."
                pages.append(f"generated/robustkernel.{prefix}{name}.html")
    return pages


def missing_math_pages(root: Path) -> list[str]:
    """Pages that must carry maths but were not built."""
    return [f"{page}: not built" for page in math_pages(root) if not (root / page).is_file()]


def browser() -> str | None:
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


# Appended to a copy of a page: once it has laid out (and MathJax has typeset its maths), list the
# headings, the menu, table of contents and breadcrumb entries, and the tables, whose content is
# wider than their box (cut off, spilling over, or a table that has to be scrolled sideways), and
# say so if the page has formulas but MathJax typeset none.
CUT_OFF_PROBE = r"""<script>
window.addEventListener("load", async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await new Promise((done) => setTimeout(done, 300));
  const cut = [];
  const selector = "h1, h2, h3, nav a, nav li, .bd-sidebar a, .bd-toc a, .navbar-brand, "
    + ".pst-scrollable-table-container";
  for (const element of document.querySelectorAll(selector)) {
    const style = getComputedStyle(element);
    if (element.offsetParent === null || style.display === "inline") continue;
    if (element.scrollWidth > element.clientWidth + 1) {
      const text = element.textContent.trim().replace(/\s+/g, " ").slice(0, 60);
      cut.push(element.tagName.toLowerCase() + " " + text);
    }
  }
  const maths = document.querySelectorAll(".math").length;
  if (maths && !document.querySelector("mjx-container")) {
    cut.push("maths: MathJax typeset none of the " + maths + " formulas");
  }
  const report = document.createElement("pre");
  report.id = "cut-off-report";
  report.textContent = JSON.stringify(cut);
  document.body.appendChild(report);
});
</script>"""


def cut_off_text(executable: str, target: Path) -> list[str]:
    """The headings, menu entries and tables of ``target`` that Chromium lays out wider than
    their box (at the screenshots' window size), and maths MathJax left untypeset, read from a
    probe copy of the page beside it."""
    probe = target.with_name(f"_cut_off_probe_{target.name}")
    probe.write_text(
        target.read_text(encoding="utf-8").replace("</body>", CUT_OFF_PROBE + "</body>"),
        encoding="utf-8",
    )
    try:
        run = subprocess.run(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1280,1600", "--virtual-time-budget=5000", "--dump-dom",
             probe.resolve().as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r'<pre id="cut-off-report">(.*?)</pre>', run.stdout, re.S)
    if found is None:
        return ["(the layout probe did not run)"]
    return json.loads(html.unescape(found.group(1)))


def screenshot_problems(root: Path, folder: Path) -> list[str]:
    """Render the ``SCREENSHOT_PAGES`` in headless Chromium; a picture that is missing or of
    one colour (a blank page), and a heading or menu entry cut off, are problems."""
    from matplotlib.image import imread

    executable = browser()
    if executable is None:
        return ["no Chromium to take screenshots (apt-get install chromium)"]
    folder.mkdir(parents=True, exist_ok=True)
    problems = []
    for name, page in SCREENSHOT_PAGES.items():
        target = root / page
        if not target.is_file():
            problems.append(f"{page}: not built")
            continue
        picture = folder / f"{name}.png"
        picture.unlink(missing_ok=True)
        subprocess.run(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1280,1600", f"--screenshot={picture}", target.resolve().as_uri()],
            capture_output=True, timeout=120, check=False,
        )
        if not picture.is_file():
            problems.append(f"{page}: Chromium wrote no screenshot")
        elif imread(picture)[..., :3].std() < 0.01:
            problems.append(f"{page}: the screenshot is blank")
        problems += [f"{page}: cut off in the browser: {text}"
                     for text in cut_off_text(executable, target)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the built site (docs/_build/html)")
    parser.add_argument("--screenshots", type=Path, help="folder for the browser screenshots")
    args = parser.parse_args(argv)
    problems = site_problems(args.root) + missing_math_pages(args.root)
    if args.screenshots is not None:
        problems += screenshot_problems(args.root, args.screenshots)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"site {args.root}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
