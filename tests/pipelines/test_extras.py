"""A missing extra fails with one line naming it (issue 27): the library needs numpy and pyarrow
only; the report's matplotlib and jinja2 (extra ``report``) and the CLI's pyyaml and tqdm (extra
``cli``) are imported where they are used. ``sys.modules[name] = None`` makes ``import name``
raise ImportError, as when the package is not installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines.errors import MissingExtraError, exit_code


def _results():
    ev = Evaluation(label_col="y", score_col="p", metrics=["accuracy", "roc_curve"])
    return ev.evaluate({"y": np.array([1, 0, 1]), "p": np.array([0.9, 0.2, 0.4])})


@pytest.mark.parametrize("module", ["jinja2", "matplotlib.figure"])
def test_the_report_without_its_extra_names_it(tmp_path, monkeypatch, module):
    from mergeable_metrics.pipelines.report import write_report

    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtraError) as e:
        write_report(_results(), tmp_path / "r.html")
    dist = module.split(".")[0]
    assert str(e.value).endswith(f"needs {dist}: pip install 'mergeable-metrics[report]'"), str(e.value)
    assert "\n" not in str(e.value) and exit_code(e.value) == 2


def test_the_progress_bar_without_tqdm_names_the_cli_extra(monkeypatch):
    from mergeable_metrics.pipelines.progress import Progress

    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert Progress(enabled=False).enabled is False  # off: nothing imported
    with pytest.raises(MissingExtraError, match=r"^the progress bar needs tqdm: pip install 'mergeable-metrics\[cli\]'$"):
        Progress(10, enabled=True)


def test_a_yaml_config_without_pyyaml_is_one_error_line_naming_the_cli_extra(tmp_path, monkeypatch, capsys):
    from mergeable_metrics.pipelines.evaluate import main

    cfg = tmp_path / "eval.yaml"
    cfg.write_text("label: y\n")
    monkeypatch.setitem(sys.modules, "yaml", None)
    code = main(["--config", str(cfg), "--input", str(tmp_path / "none.parquet"), "--output", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert err[0] == f"error: config {str(cfg)!r}: reading YAML needs pyyaml: pip install 'mergeable-metrics[cli]'", err
