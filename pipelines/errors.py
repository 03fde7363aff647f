"""The command lines' errors: one exit-code scheme, one clean ``error:`` line, the trace in a log.

Exit codes of ``python -m mergeable_metrics.pipelines.evaluate`` (and ``mergeable-evaluate``):

- **2**, a usage or configuration error: a bad flag or config file, an unknown metric or a bad
  metric parameter, a missing file or column, a file that cannot be read
  (:class:`mergeable_metrics.pipelines.io.InputError`), an engine that is not installed or cannot start (no Java,
  Spark workers that cannot import the package), an extra that is not installed
  (:class:`MissingExtraError`).
- **1**, a data error: an invalid value in the input (a NaN score, a label outside the classes,
  a negative weight, text in a number column: ``ValueError`` / ``TypeError`` from ``core``, also
  when a Beam or Spark worker raised it), or any other failure while the job runs.
- **0** otherwise.

Beam and Spark wrap a worker's exception in their own (Spark's ``PythonException`` holds the
worker's Python traceback and the JVM's stack): :func:`error_message` finds the original one-line
message, and :func:`cli_logging` sends the engines' own log lines to a log file instead of stderr
(``--verbose`` shows them), so a failed run prints one ``error:`` line and the log file's path.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Iterator, NoReturn

USAGE, DATA = 2, 1


class MissingExtraError(ImportError):
    """An optional dependency of the CLI or the report is not installed; the message is one line
    naming the extra that installs it."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """``import module``, or :class:`MissingExtraError` naming the extra: the CLI's and the report's
    optional dependencies (matplotlib, jinja2: extra ``report``; pyyaml, tqdm: extra ``cli``) are
    imported only where they are used, through here.

    >>> require("json", "cli", "reading JSON").__name__
    'json'
    >>> require("no_such_module_xyz", "report", "the HTML report")
    Traceback (most recent call last):
    ...
    mergeable_metrics.pipelines.errors.MissingExtraError: the HTML report needs no_such_module_xyz: pip install 'mergeable-metrics[report]'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        dist = {"yaml": "pyyaml"}.get(module.split(".")[0], module.split(".")[0])
        raise MissingExtraError(f"{feature} needs {dist}: pip install 'mergeable-metrics[{extra}]'") from None


#: a Python exception line of a traceback: ``ValueError: column 'p': ...``
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$")
#: exceptions of these names (also raised in a worker) are configuration or set-up problems
_USAGE_NAMES = {"InputError", "ConfigError", "FileNotFoundError", "ModuleNotFoundError", "ImportError", "SparkSetupError"}


def _engine_wrapped(e: BaseException) -> bool:
    module = type(e).__module__ or ""
    return module.startswith(("pyspark", "py4j"))


def _original(e: BaseException) -> tuple[str, str] | None:
    """``(exception name, message)`` of the Python exception a Spark worker raised, from the
    last exception line of the wrapping exception's text; None if there is none."""
    text = str(e)
    found = None
    for line in text.splitlines():
        m = _EXCEPTION_LINE.match(line.strip())
        if m and not m.group(1).startswith(("org.", "java.", "scala.", "py4j.", "pyspark.")):
            found = (m.group(1).rsplit(".", 1)[-1], m.group(2).strip())
    return found


def error_message(e: BaseException) -> str:
    """The one-line message of ``e`` for the ``error:`` line.

    A Spark ``PythonException`` / ``Py4JJavaError`` gives the message of the worker's original
    Python exception (or the first line of the JVM's); other exceptions give their own message,
    with the exception's name when the message is empty or the exception is not one of the
    documented kinds (``KeyError: 'x'``).
    """
    if _engine_wrapped(e):
        orig = _original(e)
        if orig is not None:
            return orig[1]
        java = getattr(e, "java_exception", None)
        text = str(java) if java is not None else str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
        return lines[0] if lines else type(e).__name__
    text = str(e).strip()
    if isinstance(e, KeyError) or not text or not isinstance(e, (ValueError, TypeError, RuntimeError, ImportError, OSError)):
        return f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text


def exit_code(e: BaseException) -> int:
    """2 for a usage, configuration or set-up error, 1 for a data error or another failure (see
    the module docstring)."""
    if _engine_wrapped(e):
        orig = _original(e)
        return USAGE if orig is not None and orig[0] in _USAGE_NAMES else DATA
    names = {c.__name__ for c in type(e).__mro__}
    return USAGE if names & _USAGE_NAMES else DATA


#: the log file of the running :func:`cli_logging` block whose child processes' stderr goes to it
_CHILD_LOG: list[Path] = []


class _Ours(logging.Filter):
    """Lets through the records of the ``pipelines`` loggers only (the stage lines)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == "pipelines" or record.name.startswith("pipelines.")


@contextlib.contextmanager
def cli_logging(log_path: str | os.PathLike, quiet: bool = False, verbose: bool = False) -> Iterator[Path]:
    """Route log records for a command-line run, and restore the logging set-up afterwards.

    stderr gets the ``pipelines`` stage lines (INFO; only errors with ``quiet``); every record
    of WARNING and above (Beam's, Spark's, ours) and the stage lines go to ``log_path``, created
    on the first record (a previous run's file is removed first). With ``verbose`` stderr gets
    everything the file gets; without it, a Spark JVM started in the block (:func:`engine_stderr`)
    writes its own stderr to ``log_path`` too.

    Yields:
        ``log_path`` as a Path.
    """
    path = Path(log_path)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    root, ours = logging.getLogger(), logging.getLogger("pipelines")
    saved = (root.level, ours.level)
    file_handler = logging.FileHandler(path, mode="a", encoding="utf-8", delay=True)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    file_handler.setLevel(logging.INFO)
    err_handler = logging.StreamHandler(sys.stderr)
    err_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    err_handler.setLevel(logging.ERROR if quiet else logging.INFO)
    if not verbose:
        err_handler.addFilter(_Ours())
    root.setLevel(logging.WARNING if root.level == logging.NOTSET or root.level > logging.WARNING else root.level)
    ours.setLevel(logging.INFO)
    root.addHandler(file_handler)
    root.addHandler(err_handler)
    if not verbose:
        _CHILD_LOG.append(path)
    try:
        yield path
    finally:
        if not verbose:
            _CHILD_LOG.remove(path)
        root.removeHandler(file_handler)
        root.removeHandler(err_handler)
        file_handler.close()
        root.setLevel(saved[0])
        ours.setLevel(saved[1])


#: errors whose message says all (raised by this package about the input or the set-up): no trace
_SELF_EXPLAINED = {"InputError", "ConfigError", "FileNotFoundError"}


def report_error(e: BaseException, log_path: str | os.PathLike | None, verbose: bool = False) -> int:
    """Print ``error: <one line>`` to stderr, write the full trace to ``log_path`` (and, with
    ``verbose``, to stderr) and say where it is, and return the exit code (:func:`exit_code`).
    A missing file or column, an unreadable file or a bad config file (their messages say all)
    print only the ``error:`` line."""
    if {c.__name__ for c in type(e).__mro__} & _SELF_EXPLAINED:
        print(f"error: {error_message(e)}", file=sys.stderr)
        return exit_code(e)
    trace = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    if verbose:
        print(trace, file=sys.stderr, end="")
    print(f"error: {error_message(e)}", file=sys.stderr)
    if log_path is not None:
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(trace)
        if not verbose:
            print(f"the full trace is in {log_path} (or rerun with --verbose)", file=sys.stderr)
    return exit_code(e)


@contextlib.contextmanager
def stderr_fd_to(path: str | os.PathLike | None) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` (appending) for the block, so that child processes
    started in it (Spark's JVM, which logs to its own stderr, and the Python workers it starts)
    write there; restored afterwards. ``None``: no change."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def engine_stderr() -> contextlib.AbstractContextManager[None]:
    """Around starting an engine's processes (``get_spark``): inside a :func:`cli_logging` block
    without ``verbose``, their stderr goes to its log file (:func:`stderr_fd_to`); else no change."""
    return stderr_fd_to(_CHILD_LOG[-1] if _CHILD_LOG else None)


def program_name(module: str) -> str:
    """The name a user typed to start the program: the console script's (``mergeable-evaluate``)
    when run through it, else ``python -m <module>`` (argparse would print ``evaluate.py``)."""
    invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if invoked.startswith("mergeable-"):
        return invoked
    return f"python -m {module}"


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are short: the ``error:`` line, the closest option
    to each unknown one (``--treshold`` -> ``(did you mean --threshold?)``) and a pointer to
    ``--help``, instead of the whole usage (exit code 2, as argparse)."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        hints = []
        if message.startswith("unrecognized arguments:"):
            for token in message.split(":", 1)[1].split():
                name = token.split("=", 1)[0]
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6) if name.startswith("-") else []
                if close:
                    hints.append(f"{name}: did you mean {close[0]}?")
        hint = f" ({'; '.join(hints)})" if len(hints) > 1 else (f" ({hints[0].split(': ', 1)[1]})" if hints else "")
        self.exit(2, f"{self.prog}: error: {message}{hint}\nsee {self.prog} --help for every option\n")
