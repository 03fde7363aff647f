"""Sphinx configuration of the mergeable-metrics docs (MyST Markdown pages, API reference from docstrings).

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (needs the ``docs`` extra).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "mergeable-metrics"
author = "the mergeable-metrics authors"
copyright = "the mergeable-metrics authors"

extensions = [
    "myst_parser",  # the pages are Markdown, as the README was: they moved as they were
    "sphinx.ext.autodoc",  # the API reference reads the docstrings the code already has
    "sphinx.ext.napoleon",  # ... which are Google style (Args:, Returns:, Raises:)
    "registry_table",  # the metrics table, generated from the registry at build time
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "**/.ipynb_checkpoints"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# the optional engines are documented from their docstrings even where Beam or Spark is not installed
autodoc_mock_imports = ["apache_beam", "pyspark"]

html_theme = "alabaster"
html_title = "mergeable-metrics"
napoleon_use_ivar = True  # Attributes: sections as fields (dataclass fields are also members: no duplicates)
# the docstrings' own section names, rendered like Args:
napoleon_custom_sections = [("Class attributes", "params_style"), ("Fields", "params_style")]
