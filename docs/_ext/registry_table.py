"""Sphinx extension: the ``metrics-table`` directive, the table of every registered metric.

The table is :func:`mergeable_metrics.metrics.registry_table.markdown_table`, made when the docs
are built, so it cannot go stale: a metric that registers itself is in the next build.
"""

from __future__ import annotations

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class MetricsTable(SphinxDirective):
    """```{metrics-table}``` in a MyST page: the registry's Markdown table, parsed as the page's Markdown."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from mergeable_metrics.metrics.registry_table import markdown_table

        container = nodes.container(classes=["metrics-table"])
        self.state.nested_parse(StringList(markdown_table().splitlines(), source="registry"), self.content_offset, container)
        return [container]


def setup(app):
    app.add_directive("metrics-table", MetricsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
