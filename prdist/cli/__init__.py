"""The ``prdist`` command.

Each sub-command lives in its own module (``budget``, ``synth``, ``run``, ``compare``, ``labels``,
``ingest``, ``release``, ``history``): an ``_add_*`` function registered in :func:`build_parser` and
its ``_cmd_*`` handler; ``_common``, ``_prefect`` and ``_checks`` hold what they share. Here:
the parser, the console while a command runs (warnings as one line, a reader that may go away),
and the exit codes, mapped once: 2 for bad input (one line on stderr naming the problem and the
fix), 3 when labels are awaited, 1 for anything else. ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback

from prdist.errors import AwaitingLabels, InputError
from prdist.cli._checks import (
    OUTPUT_OPTIONS,
    URL_OPTIONS,
    _check_outputs,
    _check_stores_answer,
    _refuse_credentials_in_urls,
)
from prdist.cli._common import (
    EXIT_AWAITING_LABELS,
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    LARGEST_COUNT,
    _Parser,
    _count_options_fit,
    _one_line,
    count,
)
from prdist.cli.budget import _add_budget
from prdist.cli.compare import _add_compare, parse_system
from prdist.cli.history import _add_history
from prdist.cli.ingest import _add_ingest
from prdist.cli.labels import STATUS_SHOWN, _add_labels, status_text
from prdist.cli.release import _add_release
from prdist.cli.run import DEMO_JUDGE_ACCURACY, _add_run
from prdist.cli.synth import _add_synth

__all__ = [
    "DEMO_JUDGE_ACCURACY",
    "EXIT_AWAITING_LABELS",
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "EXIT_OK",
    "LARGEST_COUNT",
    "OUTPUT_OPTIONS",
    "STATUS_SHOWN",
    "URL_OPTIONS",
    "build_parser",
    "console_main",
    "count",
    "main",
    "parse_system",
    "status_text",
]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="prdist",
        description=(
            "Guaranteed bounds and confidence bands on the precision and PR curve of a massive "
            "ranked resource, from few labels."
        ),
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    # Sub-commands register themselves here, one add_* call each.
    _add_budget(sub)
    _add_synth(sub)
    _add_run(sub)
    _add_labels(sub)
    _add_compare(sub)
    _add_release(sub)
    _add_history(sub)
    _add_ingest(sub)
    _count_options_fit(parser)
    return parser


@contextlib.contextmanager
def _warnings_as_lines():
    """Show each distinct warning once, as one line ``prdist: warning: ...`` (no file, line or source)."""
    import warnings

    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = f"prdist: warning: {_one_line(message)}"
        if text not in shown:
            shown.add(text)
            print(text, file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


class _ReaderMayGo:
    """Standard output (or error) while a command runs: a reader that goes away ends the output, not the command.

    Python ignores SIGPIPE, so a write to a pipe whose reader has gone (``prdist run ... | head
    -1``) raises BrokenPipeError. Here that write and every later one go to the null device (the
    descriptor is pointed there, so the flush at exit does not fail again) and the command runs
    to its end: its exit code (3 while labels are awaited) and its lines on the other stream
    survive the pipe, as ``set -o pipefail`` expects. A stream that is closed when the command
    starts (``prdist ... >&-``) is the null device from the start, so a file the command opens
    can never take its descriptor.
    """

    def __init__(self, stream):
        self._stream = stream
        self.gone = False

    @classmethod
    def around(cls, stream, fd: int):
        """``stream`` wrapped; a missing stream (descriptor ``fd`` closed) becomes the null device."""
        if stream is None:
            try:
                os.fstat(fd)
            except OSError:  # closed: hold the descriptor, so that no file opened later gets it
                null = os.open(os.devnull, os.O_WRONLY)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            stream = open(fd, "w", closefd=False)  # noqa: SIM115 (lives as long as the process)
        return stream if isinstance(stream, cls) else cls(stream)

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._discard()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._discard()

    def _discard(self) -> None:
        self.gone = True
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # an in-memory stream (tests): nothing to redirect
            return
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The ephemeral Prefect server phones home unless told not to; clusters are often offline.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # With --prefect and no API, Prefect starts a temporary server; its 20 s default is not enough
    # on a busy machine (8 commands at once on 2 cores). Read when Prefect is imported, so set now.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    # NumPy's OpenBLAS starts its threads on import, and they spin ~0.1 s of CPU waiting for work
    # (a run has none for them), taking a core from the command. Shortest spin before they sleep:
    # their number, hence every result, stays the same. Read when NumPy is imported, so set now.
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    debug = "--debug" in argv
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayGo.around(sys.stdout, 1), _ReaderMayGo.around(sys.stderr, 2)
    try:
        return _run_command(argv, debug)
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = streams


def _run_command(argv: list, debug: bool) -> int:
    """Parse ``argv``, run the sub-command, and map its outcome to an exit code."""
    try:
        args = build_parser().parse_args(argv)
        _refuse_credentials_in_urls(args)
        _check_stores_answer(args)
        _check_outputs(args)
        with _warnings_as_lines():
            return int(args.handler(args) or EXIT_OK)
    except AwaitingLabels as exc:
        print(f"prdist: {_one_line(exc)}", file=sys.stderr)
        return EXIT_AWAITING_LABELS
    except InputError as exc:
        if debug:
            traceback.print_exc()
        print(f"prdist: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("prdist: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # the last resort: one line, traceback on request
        if debug:
            traceback.print_exc()
        print(f"prdist: failed: {type(exc).__name__}: {_one_line(exc)} (rerun with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILURE


def console_main() -> None:
    """The ``prdist`` command: :func:`main`, then an exit that skips interpreter finalisation.

    pyarrow's C++ thread pools can abort the process while the interpreter finalises, after the
    command has done all its work and printed its result: "terminate called without an active
    exception", exit 134 (apache/arrow#34314 and #39862, open upstream). Here it ended 1 of 224
    runs made 8 at a time on 2 cores. So the command does what the interpreter does first when it
    exits, in the same order: it runs threading's exit hooks (Prefect drains its events worker
    there: task-run states and prdist's events) and waits for non-daemon threads, then the atexit
    handlers (logging's, which flushes Prefect's API log handler); it then flushes its output and
    leaves with ``os._exit``. The exit code is the command's, and the race with finalisation is
    never entered (nor its last garbage collection, about 0.1 s). Tests and notebooks call
    :func:`main`, which returns normally.
    """
    import atexit
    import threading

    _keep_freed_memory()
    code = main()
    threading._shutdown()  # Py_FinalizeEx's first step: threading's exit hooks, then non-daemon threads joined
    atexit._run_exitfuncs()  # its next one
    for stream in (sys.stdout, sys.stderr):
        try:
            stream and _ReaderMayGo(stream).flush()
        except ValueError:  # closed by an atexit handler
            pass
    os._exit(code)


#: glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_memory() -> None:
    """Let this process's C heap (glibc) serve blocks under 32 MiB and keep up to 128 MiB of
    freed memory per arena, as prdist's Dask workers do
    (:data:`prdist.dataflow.engine.cluster.WORKER_MALLOC_CONFIG`).

    A run allocates and frees NumPy arrays of 1-30 MiB thousands of times. With glibc's
    defaults, freed memory goes back to the kernel (a block above the mmap threshold at once, the
    heap's top once it passes the trim threshold), and the next such array faults its pages in
    again: a 10^7-item sorted run took 39,000-45,000 page faults, and 22,300 with these settings
    (wall 0.519 -> 0.479 s, medians of 11 interleaved runs, load 0.8; peak memory 176 -> 182 MB).
    Only this process: a cluster's workers get theirs when they start. Only on Linux with glibc
    (``mallopt``); a no-op elsewhere.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 128 << 20)
