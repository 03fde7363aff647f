"""The Python examples of the README and of the docs run as written (issues 16 and 27).

Every fenced ``python`` block of README.md and of ``docs/**/*.md`` runs in its own subprocess with
this interpreter, in a fresh temporary directory, without ``PYSPARK_PYTHON`` (so the Spark snippets
work the documented way, through ``mergeable_metrics.spark.get_spark()``).

* README blocks run alone: each quick start must run as written from a scratch directory.
* A docs block runs after ``docs/example_data.py`` (the made-up data the pages use, shown on
  ``docs/example-data.md``) and after the setup blocks of its own page that come before it.
* Blocks whose first line is a ``>>>`` prompt are doctests (``docs/add_a_metric.md``,
  ``docs/onlinemetrics.md``): pytest's ``--doctest-glob=*.md`` runs them, not this test.

An HTML comment on the line before a block marks it:

* ``<!-- docs-test: setup -->``: a setup block (it makes up data for the later blocks of its page);
* ``<!-- docs-test: skip -->``: not run (keep these rare, and say why in the page's text).

A block fails the test when its process exits non-zero; the test prints its stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
EXAMPLE_DATA = DOCS / "example_data.py"
MARK = re.compile(r"^<!--\s*(?:docs|readme)-test:\s*(setup|skip)\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    code: str
    mark: str | None  # "setup", "skip" or None


def readme_blocks(text: str) -> list[Block]:
    """The fenced ``python`` blocks of ``text`` with the mark of the line before each (if any)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if lang == "python":
            prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            mark = MARK.match(prev.strip())
            blocks.append(Block(start + 1, "\n".join(lines[start + 1 : j]) + "\n", mark.group(1) if mark else None))
        i = j + 1
    return blocks


def _is_doctest(block: Block) -> bool:
    return block.code.lstrip().startswith(">>>")


PAGES = [README, *sorted(DOCS.rglob("*.md"))]
BLOCKS = {page: [b for b in readme_blocks(page.read_text(encoding="utf-8")) if not _is_doctest(b)] for page in PAGES}
RUN = [(page, b) for page in PAGES for b in BLOCKS[page] if b.mark is None]


def _id(page: Path, block: Block) -> str:
    return f"{page.relative_to(ROOT)}:{block.line}"


def test_readme_blocks_are_found():
    assert [b for b in BLOCKS[README] if b.mark is None] and not [b for b in BLOCKS[README] if b.mark == "setup"]
    assert any(b.mark == "setup" for page in PAGES if page != README for b in BLOCKS[page])
    assert readme_blocks("x\n<!-- docs-test: skip -->\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = 2\n```\n") == [
        Block(3, "a = 1\n", "skip"),
        Block(9, "b = 2\n", None),
    ]
    assert _is_doctest(Block(1, ">>> 1 + 1\n2\n", None)) and not _is_doctest(Block(1, "x = 1  # >>>\n", None))


SPARK = re.compile(r"\b(mergeable_metrics.spark|pyspark)\b")
BEAM = re.compile(r"\b(mergeable_metrics.beam|apache_beam)\b")


def _needs(code: str) -> None:
    if SPARK.search(code):
        pytest.importorskip("pyspark")  # (no Java: tests/conftest.py skips every test marked spark)
    if BEAM.search(code):
        pytest.importorskip("apache_beam")


def _param(page: Path, b: Block):
    marks = [m for m, rx in ((pytest.mark.spark, SPARK), (pytest.mark.beam, BEAM)) if rx.search(b.code)]
    return pytest.param(page, b, marks=marks, id=_id(page, b))


@pytest.mark.parametrize(("page", "block"), [_param(p, b) for p, b in RUN])
def test_readme_example_runs(page, block, tmp_path):
    _needs(block.code)
    setups = [] if page == README else [EXAMPLE_DATA.read_text(encoding="utf-8")]
    setups += [b.code for b in BLOCKS[page] if b.mark == "setup" and b.line < block.line]
    script = tmp_path / "example.py"
    script.write_text("\n".join(setups) + "\n" + block.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{_id(page, block)}:\n{block.code}\n--- stderr ---\n{proc.stderr[-4000:]}"
