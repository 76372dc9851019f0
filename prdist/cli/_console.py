"""The console while a command runs: warnings as one line, a reader that may go away."""

from __future__ import annotations

import contextlib
import os
import sys

from prdist.cli._common import _one_line


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
