"""Typed exceptions of prdist.

Every error a user can cause derives from :class:`PrdistError` and carries one message that names
the problem and the fix. The command line maps :class:`InputError` (and its subclasses) to exit
code 2 and :class:`AwaitingLabels` to exit code 3; anything else is exit code 1.
"""

from __future__ import annotations

__all__ = [
    "PrdistError",
    "InputError",
    "ParameterError",
    "DataError",
    "AwaitingLabels",
]


class PrdistError(Exception):
    """Base class of every error prdist raises on purpose."""


class InputError(PrdistError):
    """Bad input from the user: parameters, files, URLs, credentials (CLI exit code 2)."""


class ParameterError(InputError, ValueError):
    """A parameter is outside its documented domain."""


class DataError(InputError, ValueError):
    """Input data violates its contract (schema, finiteness, uniqueness, order, labels)."""


class AwaitingLabels(PrdistError):
    """Planned items still need human labels (CLI exit code 3).

    Everything computable was written; ``missing`` is the number of items to annotate and
    ``task`` where the annotation task was written (if it was).
    """

    def __init__(self, message: str, *, missing: int, task: str | None = None):
        super().__init__(message)
        self.missing = int(missing)
        self.task = task
