"""A one-line progress report for long distributed passes, on stderr and only at a terminal."""

from __future__ import annotations

import sys
import time

__all__ = ["report_progress"]

_MIN_TASKS = 8


def report_progress(futures, label: str) -> None:
    """Count ``futures`` as they finish, rewriting one stderr line ("label: 12/40 partitions").

    Silent when stderr is not a terminal (logs, CI, tests) or the pass is small; stdout is left
    alone, since its last line is the command's result.
    """
    stream = sys.stderr
    if len(futures) < _MIN_TASKS or not stream.isatty():
        return
    from distributed import as_completed  # here: opening a resource need not import distributed

    started, total = time.monotonic(), len(futures)
    for done, _ in enumerate(as_completed(futures), start=1):
        stream.write(f"\r{label}: {done}/{total} partitions, {time.monotonic() - started:.0f} s")
        stream.flush()
    stream.write("\n")
