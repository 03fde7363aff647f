"""``core`` is engine-free: it never imports apache_beam or pyspark (DESIGN section 2), nor the
project's packages built on it (``pipelines``, ``mergeable_metrics.beam``, ``mergeable_metrics.spark``: the arrow
points from them to core).

Checked twice: statically (every ``import`` / ``from ... import`` / ``importlib.import_module`` /
``__import__`` with a literal name anywhere in core's source, including inside functions), and
dynamically (import ``core`` and every submodule in a fresh interpreter, then look at
``sys.modules``).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import mergeable_metrics

CORE_DIR = Path(mergeable_metrics.__file__).resolve().parent
REPO_ROOT = CORE_DIR.parent
FORBIDDEN = ("apache_beam", "pyspark", "mergeable_metrics.pipelines", "mergeable_metrics.beam", "mergeable_metrics.spark")


def forbidden(name: str) -> bool:
    """``name`` is a forbidden module or inside one."""
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


# heavy optional libraries core must not pull in at import time (lazy imports inside functions,
# e.g. pandas in Results.to_pandas, are fine)
HEAVY = ("pandas", "pyarrow", "sklearn", "scipy")


def core_sources() -> list[Path]:
    files = sorted(CORE_DIR.rglob("*.py"))
    assert files and CORE_DIR / "__init__.py" in files
    return files


def imported_names(tree: ast.AST) -> list[tuple[str, int, bool]]:
    """``(module name, line, at module level)`` of every import in ``tree``."""
    module_level = {id(n) for n in getattr(tree, "body", [])}
    out = []
    for node in ast.walk(tree):
        top = id(node) in module_level
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                out.append((node.module, node.lineno, top))
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
            if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
                if isinstance(node.args[0].value, str):
                    out.append((node.args[0].value, node.lineno, False))
    return out


def test_ast_scan_finds_no_engine_imports():
    bad = []
    for path in core_sources():
        for name, line, _ in imported_names(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if forbidden(name):
                bad.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_ast_scan_sees_imports():
    """The scanner itself works (so an empty result above means something)."""
    src = (
        "import apache_beam as beam\nfrom pyspark.sql import functions\ndef f():\n    import importlib\n"
        "    importlib.import_module('pyspark.sql')\n    from mergeable_metrics.pipelines import report\n"
    )
    names = [n for n, _, _ in imported_names(ast.parse(src))]
    assert sum(n.startswith("pyspark") for n in names) == 2 and "apache_beam" in names and "mergeable_metrics.pipelines" in names


def test_module_level_imports_are_stdlib_numpy_or_core():
    allowed = set(sys.stdlib_module_names) | {"numpy", "mergeable_metrics", "__future__"}
    bad = []
    for path in core_sources():
        for name, line, top in imported_names(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if top and name.split(".")[0] not in allowed:
                bad.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {name} at module level")
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def modules_after_import() -> dict:
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import mergeable_metrics\n"
        "names = [m.name for m in pkgutil.walk_packages(mergeable_metrics.__path__, 'mergeable_metrics.')]\n"
        "for n in names: importlib.import_module(n)\n"
        "print(json.dumps({'submodules': names, 'modules': sorted(sys.modules)}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_core_loads_no_engine(modules_after_import):
    assert len(modules_after_import["submodules"]) >= 8  # codec, evaluation, metrics, plan, ...
    loaded = [m for m in modules_after_import["modules"] if forbidden(m)]
    assert not loaded, loaded


def test_importing_core_loads_no_heavy_library(modules_after_import):
    loaded = sorted({m.split(".")[0] for m in modules_after_import["modules"]} & set(HEAVY))
    assert not loaded, f"importing core pulled in {loaded}"
