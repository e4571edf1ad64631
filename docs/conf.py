"""Sphinx configuration of the robustkernel documentation site (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import robustkernel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "robustkernel"
author = "the robustkernel developers"
copyright = "2026, the robustkernel developers"
release = robustkernel.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax 3 copied into the site's _static (no CDN): maths renders offline.
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "figures/README*"]
templates_path = ["_templates"]
html_theme = "pydata_sphinx_theme"
html_title = f"robustkernel {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
# Pages without sub-pages get no (empty) section navigation on the left.
html_sidebars = {
    page: []
    for page in ("install", "choosing", "user_guide", "how_the_automatic_fit_works",
                 "benchmarks", "reproduction", "architecture", "changelog", "contributing")
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]

# API reference: one page per public object, generated from the docstrings (numpydoc format).
autosummary_generate = True
# Methods from scikit-learn's bases (parameters, metadata routing, output containers, the
# default score) are documented by scikit-learn; their docstrings point into its site.
SKLEARN_METHODS = [
    "get_params", "set_params", "get_metadata_routing", "set_output", "score",
    "set_fit_request", "set_predict_request", "set_score_request", "set_transform_request",
    "set_predict_proba_request", "set_decision_function_request", "set_partial_fit_request",
]
autodoc_default_options = {
    "members": True,
    "inherited-members": True,
    "exclude-members": ",".join(SKLEARN_METHODS),
}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Every reference must resolve (``make docs`` turns warnings into errors): nothing is suppressed,
# and nitpicky mode warns about a cross-reference with no target.
nitpicky = True
# Dashes and ellipses typeset, quotes left straight (default="auto" must not show curly quotes).
smartquotes_action = "De"
# The API pages' "On this page" lists give a method as fit() rather than Class.fit().
toc_object_entries_show_parents = "hide"

# The markdown pages: MyST with $...$ / $$...$$ maths (rendered by MathJax) and heading anchors.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# References into scikit-learn, NumPy, SciPy, pandas, Dask and PyTorch resolve offline (the CI
# machine reaches only the package registries, so intersphinx cannot fetch inventories): see
# _ext/external_links.py.
extensions.append("external_links")

# The gallery: every script in examples/ runs at build time and its figures are shown.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": "True",
}
