"""A one-line progress report for long distributed passes, on stderr and only at a terminal."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressLine", "report_progress"]

_MIN_TASKS = 8


class ProgressLine:
    """One stderr line rewritten as the partitions of a pass finish ("label: 12/40 partitions, 3 s").

    Silent when stderr is not a terminal (logs, CI, tests) or the pass is small; stdout is left
    alone, since its last line is the command's result.
    """

    def __init__(self, total: int, label: str):
        self.stream = sys.stderr
        self.total, self.label, self.done = total, label, 0
        self.active = total >= _MIN_TASKS and self.stream.isatty()
        self.started = time.monotonic()

    def tick(self) -> None:
        """One more partition finished."""
        self.done += 1
        if self.active:
            self.stream.write(f"\r{self.label}: {self.done}/{self.total} partitions, {time.monotonic() - self.started:.0f} s")
            self.stream.flush()
            if self.done == self.total:
                self.stream.write("\n")

    def close(self) -> None:
        """End a line left unfinished (a pass that failed), so that the error starts a line of its own."""
        if self.active and 0 < self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()


def report_progress(futures, label: str) -> None:
    """Count ``futures`` of a cluster's pass as they finish, on one stderr line (:class:`ProgressLine`)."""
    line = ProgressLine(len(futures), label)
    if not line.active:
        return
    from distributed import as_completed  # here: opening a resource need not import distributed

    for _ in as_completed(futures):
        line.tick()
