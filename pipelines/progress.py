"""Progress for long runs: a tqdm bar for the local engine, stage log lines for Beam and Spark.

The local engine shows one bar on stderr: rows folded (of the total when the input is Parquet,
whose row count is in its metadata), files finished of the total, and the rate in rows/s. The CLI
shows it when stderr is a terminal (``--progress auto``, the default), always with
``--progress on`` (e.g. into a log file), and never with ``--progress off`` or ``--quiet``.

Beam and Spark runs log one line per stage (reading, running, collecting) on the ``pipelines``
logger at INFO level; the CLI prints them unless ``--quiet``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

log = logging.getLogger("pipelines")

MODES = ("auto", "on", "off")


def progress_enabled(mode: str = "auto", quiet: bool = False, stream: TextIO | None = None) -> bool:
    """Whether to draw a progress bar: never when ``quiet`` or ``mode == "off"``; always for
    ``"on"``; for ``"auto"`` when ``stream`` (default stderr) is a terminal."""
    if quiet or mode == "off":
        return False
    if mode == "on":
        return True
    if mode != "auto":
        raise ValueError(f"progress must be one of {MODES}, got {mode!r}")
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def stage(engine: str, message: str, *args: Any) -> None:
    """Log one stage of an engine run, e.g. ``stage("spark", "reading %s", path)``."""
    log.info(f"{engine}: {message}", *args)


class Progress:
    """A rows/files progress bar (tqdm, on ``file``, default stderr); a no-op when disabled.

    Args:
        total_rows: rows expected (None when unknown: the bar counts without a total).
        total_files: files expected.
        enabled: draw the bar; when False nothing is imported or printed.
        desc: label at the left of the bar.
        file: the stream (default ``sys.stderr``).

    Use as a context manager; call :meth:`update` per batch and :meth:`file_done` per file.
    """

    def __init__(self, total_rows: int | None = None, total_files: int | None = None, *, enabled: bool = True, desc: str = "rows", file: TextIO | None = None):
        self.enabled = enabled
        self.rows = 0
        self.files = 0
        self.total_files = total_files
        self._bar = None
        if enabled:
            from mergeable_metrics.pipelines.errors import require

            tqdm = require("tqdm", "cli", "the progress bar").tqdm
            self._bar = tqdm(
                total=total_rows, desc=desc, unit=" rows", unit_scale=True, file=file if file is not None else sys.stderr,
                mininterval=0.5, dynamic_ncols=True, leave=True,
            )  # fmt: skip
            self._postfix()

    def _postfix(self) -> None:
        if self._bar is not None:
            total = f"/{self.total_files}" if self.total_files is not None else ""
            self._bar.set_postfix_str(f"files {self.files}{total}", refresh=False)

    def update(self, rows: int) -> None:
        """``rows`` more rows were processed."""
        self.rows += int(rows)
        if self._bar is not None:
            self._bar.update(int(rows))

    def file_done(self) -> None:
        """One more file was finished."""
        self.files += 1
        if self._bar is not None:
            self._postfix()
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._postfix()
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
