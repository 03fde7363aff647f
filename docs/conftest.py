# pytest collects docs/ for the doctests of its Markdown pages (--doctest-glob=*.md); the Sphinx
# configuration, its extension, the example data and a local build are not test modules
collect_ignore = ["conf.py", "_ext", "example_data.py", "_build"]
