"""The README's Python examples run as written (issue 16).

Every fenced ``python`` block of README.md runs in its own subprocess with this interpreter, in a
fresh temporary directory, without ``PYSPARK_PYTHON`` (so the Spark snippets work the documented
way, through ``mergeable_metrics.spark.get_spark()``). An HTML comment on the line before a block marks it:

* ``<!-- readme-test: setup -->``: a setup block (it makes up the data the snippets use); it runs
  before every later block, setups accumulating in README order;
* ``<!-- readme-test: skip -->``: not run (keep these rare, and say why in the README's text).

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
MARK = re.compile(r"^<!--\s*readme-test:\s*(setup|skip)\s*-->\s*$")
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


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
RUN = [b for b in BLOCKS if b.mark is None]


def test_readme_blocks_are_found():
    assert RUN and any(b.mark == "setup" for b in BLOCKS)
    assert readme_blocks("x\n<!-- readme-test: skip -->\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = 2\n```\n") == [
        Block(3, "a = 1\n", "skip"),
        Block(9, "b = 2\n", None),
    ]


SPARK = re.compile(r"\b(mergeable_metrics.spark|pyspark)\b")
BEAM = re.compile(r"\b(mergeable_metrics.beam|apache_beam)\b")


def _needs(code: str) -> None:
    if SPARK.search(code):
        pytest.importorskip("pyspark")  # (no Java: tests/conftest.py skips every test marked spark)
    if BEAM.search(code):
        pytest.importorskip("apache_beam")


def _param(b: Block):
    marks = [m for m, rx in ((pytest.mark.spark, SPARK), (pytest.mark.beam, BEAM)) if rx.search(b.code)]
    return pytest.param(b, marks=marks, id=f"README.md:{b.line}")


@pytest.mark.parametrize("block", [_param(b) for b in RUN])
def test_readme_example_runs(block, tmp_path):
    _needs(block.code)
    setups = [b.code for b in BLOCKS if b.mark == "setup" and b.line < block.line]
    script = tmp_path / "example.py"
    script.write_text("".join(setups) + "\n" + block.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"README.md line {block.line}:\n{block.code}\n--- stderr ---\n{proc.stderr[-4000:]}"
