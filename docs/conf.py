"""Sphinx configuration of webrank's documentation site.

Build (warnings are errors, as in CI)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

Prose pages are Markdown (MyST); the API reference is generated from the docstrings
(numpydoc format) and the CLI reference from the commands' help (sphinx-click).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src")))

import webrank

project = "webrank"
author = "the webrank developers"
copyright = "2026, the webrank developers"
version = release = webrank.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_click",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_static", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# MyST: $...$ math and ```{directive}``` blocks; heading anchors for links like
# solvers.md#certified-error-bounds
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 4

autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"webrank {release}"
html_theme_options = {
    "navigation_depth": 3,
    "show_nav_level": 2,  # a section's pages and their headings in the left sidebar
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
# pages that are a section of their own, with no pages under them: no left sidebar (it
# would show an empty "Section Navigation")
html_sidebars = {"index": [], "getting-started": []}
html_static_path = ["_static"]
# maths by a local copy of MathJax (docs/_static/mathjax/README.md): formulas render in a
# site read offline, not only where a CDN can be reached
mathjax_path = "mathjax/tex-svg.js"
html_css_files = ["webrank.css"]  # code wraps instead of scrolling
