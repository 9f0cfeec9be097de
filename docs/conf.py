"""Sphinx configuration: the API reference (numpydoc docstrings) and the Markdown pages."""

project = "impactbench"
author = "the impactbench developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
myst_heading_anchors = 3
html_theme = "alabaster"


def _absolute_values(app, what, name, obj, options, lines) -> None:
    """Docstrings write their mathematics as plain text, where |x| is an absolute value or a
    norm, not a reStructuredText substitution: escape the bars outside tables."""
    for i, line in enumerate(lines):
        if not line.lstrip().startswith(("|", "+-", "+=")):
            lines[i] = line.replace("|", "\\|")


def setup(app) -> None:
    app.connect("autodoc-process-docstring", _absolute_values, priority=400)
