"""Check the built documentation site: every page has a title, no image is missing, no raw markup
shows, and (with ``--screenshots``) the landing page, one API page and one gallery example render
in headless Chromium to a non-blank picture.

    python docs/check_site.py docs/_build/html --screenshots docs/_build/screenshots

Exit code 1 with one line per problem, 0 when the site is sound.
"""

from __future__ import annotations

import argparse
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
]
SCREENSHOT_PAGES = {
    "landing": "index.html",
    "api": "generated/robustkernel.SubquantileKernelRegressor.html",
    "gallery": "auto_examples/auto_epsilon.html",
}


class _Page(HTMLParser):
    """The title, the image sources and the visible text (outside code, scripts and styles)."""

    def __init__(self) -> None:
        super().__init__()
        self.title, self.images, self.text = "", [], []
        self._in_title = False
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in ("script", "style", "pre", "code", "textarea"):
            self._skip += 1
        if tag == "img":
            source = dict(attrs).get("src")
            if source:
                self.images.append(source)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in ("script", "style", "pre", "code", "textarea") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.text.append(data)


def page_problems(path: Path) -> list[str]:
    """What is wrong with one built HTML page."""
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    problems = []
    if not page.title.strip():
        problems.append("no <title>")
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
    template fragments in ``_static`` excepted)."""
    skipped = ("search.html", "genindex.html")
    pages = sorted(
        p for p in root.rglob("*.html")
        if p.name not in skipped and "_static" not in p.relative_to(root).parts
    )
    if not pages:
        return [f"no HTML pages under {root}"]
    return [f"{p.relative_to(root)}: {problem}" for p in pages for problem in page_problems(p)]


def browser() -> str | None:
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot_problems(root: Path, folder: Path) -> list[str]:
    """Render the ``SCREENSHOT_PAGES`` in headless Chromium; a picture that is missing or of
    one colour (a blank page) is a problem."""
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
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the built site (docs/_build/html)")
    parser.add_argument("--screenshots", type=Path, help="folder for the browser screenshots")
    args = parser.parse_args(argv)
    problems = site_problems(args.root)
    if args.screenshots is not None:
        problems += screenshot_problems(args.root, args.screenshots)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"site {args.root}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
