"""Run the ``prdist`` command in-process the way a terminal sees it (shared by CLI tests)."""

from __future__ import annotations

import contextlib
import io
import logging

from prdist.cli import main

@contextlib.contextmanager
def prefect_console_to(stream):
    """Point Prefect's console log at ``stream`` for a while.

    Prefect's console handler keeps the stream of the moment it was configured (on the first
    import of ``prefect.main``); pointing it at the redirected stderr shows a test what a terminal
    shows: Prefect's log lines (and any traceback they carry) beside prdist's own.
    """
    from prefect.logging.handlers import PrefectConsoleHandler

    handlers = [h for h in logging.getLogger().handlers if isinstance(h, PrefectConsoleHandler)]
    saved = [(h.stream, h.console.file) for h in handlers]
    for handler in handlers:
        handler.stream = handler.console.file = stream
    try:
        yield
    finally:
        for handler, (old_stream, old_file) in zip(handlers, saved):
            handler.stream, handler.console.file = old_stream, old_file


def cli(*argv):
    """Run ``prdist`` in-process; return (exit code, stdout, stderr) .

    stderr also receives Prefect's console log, as on a terminal.
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), prefect_console_to(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
