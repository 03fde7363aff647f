"""The wheel installs one import package, ``mergeable_metrics``, with its data files, and works
from a directory holding its own ``core/`` and ``pipelines/`` packages (issue 27).

The wheel is built from a copy of the sources (``pip wheel --no-deps --no-build-isolation``: no
network, no build in the working tree) and unpacked, which is what ``pip install`` puts in
site-packages for a pure-Python wheel.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("core", "beam_metrics", "spark_metrics", "pipelines", "pyproject.toml", "README.md")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src), "-w", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("mergeable_metrics-*.whl")
    return whl


def test_the_wheel_holds_one_top_level_package_its_data_and_entry_points(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    (dist_info,) = [t for t in tops if t.endswith(".dist-info")]
    assert tops == {"mergeable_metrics", dist_info}, sorted(tops)
    assert "mergeable_metrics/py.typed" in names
    assert "mergeable_metrics/pipelines/templates/report.html.j2" in names, [n for n in names if "templates" in n]
    for sub in ("beam", "spark", "pipelines", "collection", "evaluation", "results"):
        assert f"mergeable_metrics/{sub}/__init__.py" in names, sub
    eps = configparser.ConfigParser()
    eps.read_string(zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode())
    assert dict(eps["console_scripts"]) == {
        "mergeable-evaluate": "mergeable_metrics.pipelines.evaluate:main",
        "mergeable-validate": "mergeable_metrics.pipelines.validate:main",
    }
    assert dict(eps["pytest11"]) == {"mergeable_metrics": "mergeable_metrics.pipelines.pytest_plugin"}
    meta = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    base = [ln.split(":", 1)[1].strip() for ln in meta.splitlines() if ln.startswith("Requires-Dist:") and "extra ==" not in ln]
    # numba: the compiled exact-sum kernels (issue 25); the library falls back to numpy without it
    assert sorted(r.split(">")[0].split("=")[0].strip() for r in base) == ["numba", "numpy", "pyarrow"], base


def test_the_installed_package_is_not_shadowed_by_a_users_core_and_pipelines(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    user = tmp_path / "project"
    for pkg in ("core", "pipelines"):
        (user / pkg).mkdir(parents=True)
        (user / pkg / "__init__.py").write_text("raise ImportError('the user project package was imported')\n")
    (user / "pipelines" / "evaluate.py").write_text("raise SystemExit('the user project pipelines.evaluate ran')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = (
        "import mergeable_metrics as mm, pathlib, sys; "
        f"assert pathlib.Path(mm.__file__).is_relative_to({str(site)!r}), mm.__file__; "
        "c = mm.MetricCollection('accuracy'); c.update([1, 0, 1, 1], [0.9, 0.2, 0.4, 0.8]); "
        "print(round(float(c.compute()['accuracy']), 6))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=user, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0.75"  # 3 of 4 right at the 0.5 threshold
    proc = subprocess.run(
        [sys.executable, "-m", "mergeable_metrics.pipelines.evaluate", "--help"], cwd=user, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout and "--engine" in proc.stdout
