"""pytest plugin: metric regression tests against recorded baselines (fixture ``metric_baseline``).

Installed with the package (entry point ``mergeable_metrics`` in the ``pytest11`` group); disable
it with ``-p no:mergeable_metrics``. Loading it imports only pytest and the standard library: the
evaluation (:mod:`mergeable_metrics.pipelines.baselines`, numpy) is imported the first time a test calls the fixture.

Options:
    ``--update-metric-baselines``: record the baselines of the tests that run (replacing theirs).
    ``--metric-baselines-file PATH``: the baselines file (default ``.metric-baselines.json`` in the
        rootdir); per-sample values go to the directory of the same name without ``.json``.
    ``--metric-baselines-strict``: a test without a baseline fails (default: it is skipped with the
        command that records it; ``minimum`` / ``maximum`` always apply, a violated one fails).

A test that does not use the fixture is not affected: no file is read or written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import pytest

_STORE = pytest.StashKey["_BaselineStore"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("metric-baselines", "metric regression tests (mergeable-metrics)")
    group.addoption(
        "--update-metric-baselines",
        action="store_true",
        default=False,
        help="record the metric baselines of the tests that run (metric_baseline fixture)",
    )
    group.addoption(
        "--metric-baselines-file",
        default=None,
        metavar="PATH",
        help="metric baselines file (default: .metric-baselines.json in the rootdir); per-sample values go to the directory of the same name without .json",
    )
    group.addoption(
        "--metric-baselines-strict",
        action="store_true",
        default=False,
        help="fail a metric_baseline test that has no baseline (default: skip it; minimum/maximum still apply)",
    )


def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("--metric-baselines-file")
    path = Path(option) if option else Path(".metric-baselines.json")
    if not path.is_absolute():
        path = (Path(config.invocation_params.dir) if option else Path(config.rootpath)) / path
    config.stash[_STORE] = _BaselineStore(path, config.getoption("--update-metric-baselines"), config.getoption("--metric-baselines-strict"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    store = session.config.stash.get(_STORE, None)
    if store is not None:
        store.write()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    store = config.stash.get(_STORE, None)
    if store is not None and store.written:
        terminalreporter.write_line(f"metric baselines: recorded {len(store.written)} in {store.path}")


class _BaselineStore:
    """The baselines file, read on first use; recorded entries are written at session end."""

    def __init__(self, path: Path, update: bool, strict: bool):
        self.path = path
        self.update = update
        self.strict = strict
        self._entries: dict[str, Any] | None = None
        self.pending: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.written: list[str] = []

    @property
    def sample_dir(self) -> Path:
        name = self.path.name[: -len(".json")] if self.path.name.endswith(".json") else self.path.name + ".d"
        return self.path.with_name(name)

    def entries(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = _read(self.path)
        return self._entries

    def get(self, key: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        entry = self.entries().get(key)
        if entry is None:
            return None, None
        samples = None
        name = entry.get("per_sample") if isinstance(entry, dict) else None  # compare() reports a bad entry
        if name:
            import numpy as np  # noqa: PLC0415 - only when a baseline with per-sample values is read

            if not isinstance(name, str) or Path(name).name != name or name.startswith("."):
                raise pytest.UsageError(
                    f"metric baselines file {str(self.path)!r}: entry {key!r}: per_sample {name!r} is not a file name in {str(self.sample_dir)!r}"
                )
            file = self.sample_dir / name
            if file.exists():
                import zipfile  # noqa: PLC0415

                try:
                    if not zipfile.is_zipfile(file):  # np.load would read it as a .npy or a pickle
                        raise zipfile.BadZipFile("not a .npz (zip) file")
                    with np.load(file, allow_pickle=False) as z:
                        samples = {k: z[k] for k in z.files}
                except Exception as e:  # noqa: BLE001 - zipfile.BadZipFile, zlib.error, EOFError, ValueError (pickles), OSError ...
                    node = key.split("#")[0]
                    raise pytest.UsageError(
                        f"metric baselines: the per-sample file {str(file)!r} of entry {key!r} cannot be read "
                        f"({type(e).__name__}: {e}); re-record it with: pytest --update-metric-baselines {node!r}"
                    ) from None
        return entry, samples

    def record(self, key: str, entry: dict[str, Any], per_sample: dict[str, Any]) -> None:
        self.pending[key] = (entry, per_sample)

    def write(self) -> None:
        if not self.pending:
            return
        import numpy as np  # noqa: PLC0415

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path.parent):
            self._write(np)

    def _write(self, np: Any) -> None:
        entries = _read(self.path)  # again: other sessions (or xdist workers) may have written since
        for key, (entry, per_sample) in sorted(self.pending.items()):
            entry = dict(entry)
            if per_sample:
                self.sample_dir.mkdir(parents=True, exist_ok=True)
                name = _file_name(key)
                tmp = self.sample_dir / f".{name}.tmp.npz"
                np.savez_compressed(tmp, **{k: np.asarray(v, dtype=np.float64) for k, v in per_sample.items()})
                os.replace(tmp, self.sample_dir / name)
                entry["per_sample"] = name
            else:
                entry.pop("per_sample", None)
            entries[key] = entry
            self.written.append(key)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps({"version": 1, "entries": dict(sorted(entries.items()))}, indent=1, sort_keys=False) + "\n")
        os.replace(tmp, self.path)
        self.pending.clear()


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on the baselines file's directory (POSIX ``flock``; elsewhere none), so
    that sessions writing at once (pytest-xdist workers) each read and update the file whole.
    No lock file is left behind."""
    try:
        import fcntl  # noqa: PLC0415
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"metric baselines file {str(path)!r} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise pytest.UsageError(f"metric baselines file {str(path)!r}: expected {{'version': 1, 'entries': {{...}}}}")
    return data["entries"]


def _file_name(key: str) -> str:
    """A file name for a node id: readable, unique (a hash of the whole id), portable."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)[-80:].strip("._") or "test"
    return f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:10]}.npz"


@pytest.fixture
def metric_baseline(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Check a model's metrics against the baseline recorded for this test.

    Call it as ``metric_baseline(model, batches, metrics, *, context=None, minimum=None,
    maximum=None, tolerance=0.01, higher_is_better=None, max_batches=None, inputs=None,
    targets=None, confidence=0.95, resamples=2000, seed=0)``; it returns the run
    (:class:`mergeable_metrics.pipelines.baselines.Evaluated`: ``.values``, ``.per_sample``, ...). Arguments are
    those of :func:`mergeable_metrics.pipelines.baselines.evaluate_detailed` and :func:`mergeable_metrics.pipelines.baselines.compare`;
    ``minimum`` / ``maximum`` (a number, or a dict per metric) always apply.

    With ``--update-metric-baselines`` the run is recorded under the test's node id (a second
    call in one test under ``<node id>#2``, ...). Otherwise it is compared with the recorded one:
    a baseline that measured something else fails listing every difference; a regression fails
    with the drop, its interval and the allowed drop; a missing baseline skips the test, naming the
    option that records it (fails with ``--metric-baselines-strict``; ``minimum`` / ``maximum`` are
    checked first, so a violated limit fails).
    """
    store: _BaselineStore = request.config.stash[_STORE]
    calls = [0]

    def check(
        model: Callable,
        batches: Iterable[Any],
        metrics: Mapping[str, Any],
        *,
        context: Mapping[str, Any] | None = None,
        minimum: Any = None,
        maximum: Any = None,
        tolerance: Any = 0.01,
        higher_is_better: Any = None,
        max_batches: int | None = None,
        inputs: Any = None,
        targets: Any = None,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int = 0,
    ) -> Any:
        __tracebackhide__ = True
        from mergeable_metrics.pipelines import baselines  # noqa: PLC0415 - numpy and the evaluation only when used

        calls[0] += 1
        key = request.node.nodeid if calls[0] == 1 else f"{request.node.nodeid}#{calls[0]}"
        run = baselines.evaluate_detailed(model, batches, metrics, context=context, max_batches=max_batches, inputs=inputs, targets=targets)
        baselines.check_options(run, tolerance=tolerance, higher_is_better=higher_is_better, confidence=confidence, resamples=resamples)
        limits = baselines.check_limits(run, minimum, maximum)
        limits_text = f"metric limits of {key}:\n  " + "\n  ".join(limits) if limits else ""
        if store.update:
            if limits:  # a failing run is not recorded
                pytest.fail(limits_text, pytrace=False)
            store.record(key, run.entry(), run.per_sample)
            return run
        entry, samples = store.get(key)
        how = f"record it with: pytest --update-metric-baselines {request.node.nodeid!r}"
        if entry is None:
            if limits:
                pytest.fail(limits_text, pytrace=False)
            held = " (minimum/maximum held)" if minimum is not None or maximum is not None else ""
            message = f"no metric baseline for {key} in {store.path}{held}; {how}"
            if store.strict:
                pytest.fail(message + " (--metric-baselines-strict)", pytrace=False)
            pytest.skip(message)  # never a silent pass: the comparison did not happen
        result = baselines.compare(
            run, entry, samples, tolerance=tolerance, higher_is_better=higher_is_better, confidence=confidence, resamples=resamples, seed=seed
        )
        provenance = f"baseline: {baselines.describe_provenance(entry)}\nnow:      {baselines.describe_provenance(run.entry())}"
        # every failure in one message: a violated limit never hides the baseline's verdict
        parts = [limits_text] if limits else []
        if result.mismatches:
            parts.append(
                f"the metric baseline of {key} measured something else ({len(result.mismatches)} difference"
                f"{'s' if len(result.mismatches) != 1 else ''}):\n  " + "\n  ".join(result.mismatches)
            )
        elif result.regressions:
            parts.append(
                f"metric regression in {key}:\n  "
                + "\n  ".join(result.regressions)
                + ("\nwithin tolerance:\n  " + "\n  ".join(result.checked) if result.checked else "")
            )
        if parts:
            rerecord = f"\n{provenance}\nif the change is intended, re-{how[0].lower()}{how[1:]}" if len(parts) > 1 or not limits else ""
            pytest.fail("\n".join(parts) + rerecord, pytrace=False)
        return run

    return check
