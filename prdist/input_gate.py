"""The one gate every parser of outside input passes through (standard library only).

Outside input (label files and tool exports, ingest inputs, run directories under a runs root) can
have any shape. Each parser states the shapes it reads; anything else becomes one
:class:`~prdist.errors.DataError` that names the file, the place (line, record, field) and the fix,
never a Python exception from deep inside a parser and never a guess:

- :func:`refusal` builds that one message, so every parser words it alike;
- :func:`json_document` and :func:`json_lines` parse JSON text, refusing a syntax error at its
  line and nesting too deep for the parser (``RecursionError``) by name;
- :func:`expect` checks the type of one field where it was found;
- :func:`gate` wraps a whole parser: an exception it did not turn into a
  :class:`~prdist.errors.PrdistError` itself (``AttributeError``, ``TypeError``, ``KeyError``,
  ``RecursionError``, Arrow's errors, ...) means the input had a shape the parser does not know,
  and becomes a refusal naming the file.

>>> json_document('{"key": "a"}', "labels.json")
{'key': 'a'}
>>> json_lines('{"key": "a"}\\n\\n[1]', "labels.jsonl")
Traceback (most recent call last):
...
prdist.errors.DataError: labels.jsonl, line 3: a JSON object was expected, not a list; write one JSON object per line.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

from prdist.errors import DataError, PrdistError

__all__ = ["refusal", "json_document", "json_lines", "expect", "gate"]

_TYPE_NAMES = {dict: "a JSON object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


def refusal(origin: str, place: str | None, problem: str, fix: str) -> DataError:
    """The one message for outside input that cannot be read: ``origin, place: problem; fix.``

    >>> str(refusal("a.json", "task 3, field 'data'", "a JSON object was expected, not a list",
    ...             "export the tasks again from Label Studio"))
    "a.json, task 3, field 'data': a JSON object was expected, not a list; export the tasks again from Label Studio."
    """
    where = f"{origin}, {place}" if place else origin
    return DataError(f"{where}: {problem}; {fix.rstrip('.')}.")


def _kind(value) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def expect(value, kind: type | tuple[type, ...], origin: str, place: str, fix: str):
    """``value`` if it is of ``kind``, else the refusal naming where it was found.

    >>> expect({"key": 1}, dict, "t.json", "task 1", "export again")
    {'key': 1}
    >>> expect("x", (dict, list), "t.json", "task 1, field 'annotations'", "export again")
    Traceback (most recent call last):
    ...
    prdist.errors.DataError: t.json, task 1, field 'annotations': a JSON object or a list was expected, not a string; export again.
    """
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    wanted = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
    raise refusal(origin, place, f"{wanted} was expected, not {_kind(value)}", fix)


def json_document(text: str, origin: str):
    """Parse one JSON document; a syntax error or too deep a nesting is refused with its place."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise refusal(origin, f"line {exc.lineno}, column {exc.colno}", f"not valid JSON ({exc.msg})",
                      "fix the file or export it again") from None
    except RecursionError:
        raise refusal(origin, None, "JSON nested too deeply to read", "flatten the records (no tool export nests this deep)") from None


def json_lines(text: str, origin: str, *, first_line: int = 1) -> list[tuple[int, dict]]:
    """Parse JSON Lines into ``(line number, object)`` pairs; blank lines are skipped.

    Every line must hold one JSON object; anything else is refused at its line. Lines end at
    ``\n`` (a ``\r`` before it is whitespace to JSON), so a U+2028 inside a string stays there.
    """
    records = []
    for number, line in enumerate(text.split("\n"), start=first_line):  # not splitlines: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise refusal(origin, f"line {number}", f"not valid JSON ({exc.msg})", "fix or drop that line") from None
        except RecursionError:
            raise refusal(origin, f"line {number}", "JSON nested too deeply to read", "flatten that record") from None
        records.append((number, expect(record, dict, origin, f"line {number}", "write one JSON object per line")))
    return records


@contextmanager
def gate(origin: str, fix: str = "check that the file is what its format option says", *,
         passing: tuple[type[BaseException], ...] = ()):
    """Turn any unexpected exception raised while parsing ``origin`` into one refusal.

    Errors prdist raises on purpose pass unchanged (they already name the problem and the fix);
    ``MemoryError`` and ``KeyboardInterrupt`` pass too (they are not about the input's shape), and
    so do the exception types in ``passing`` (``OSError`` for a parser reading from storage, whose
    own layer translates or retries them).

    >>> with gate("export.json"):
    ...     {"annotations": "none"}["annotations"].get("result")
    Traceback (most recent call last):
    ...
    prdist.errors.DataError: export.json: a record has a shape this reader does not know (AttributeError: 'str' object has no attribute 'get'); check that the file is what its format option says.
    """
    try:
        yield
    except (PrdistError, MemoryError, *passing):
        raise
    except RecursionError:
        raise refusal(origin, None, "records nested too deeply to read", fix) from None
    except Exception as exc:  # noqa: BLE001 - the gate's purpose: no parser exception reaches the user raw
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise refusal(origin, None, f"a record has a shape this reader does not know ({type(exc).__name__}: {detail})",
                      fix) from None
