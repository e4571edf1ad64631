"""Sphinx configuration of the robustkernel documentation site (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import robustkernel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
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

# The markdown pages (user guide, architecture, reproduction, benchmarks) link to files of the
# repository (sources, examples, results) that are not pages of the site.
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]

# The gallery: every script in examples/ runs at build time and its figures are shown.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": "True",
}
