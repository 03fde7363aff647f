"""The plan of a set of metrics (deduplicated states) and the user-facing collections: ``MetricCollection``, ``BinaryMetrics`` (``plan``), the single-metric tracker (``tracker``) and the metrics of cell states over a leading slice axis (``stacked``).

Imports ``metrics`` and below.
"""
