"""What every sub-command of ``prdist`` shares: the argument parser, exit codes, common options, output."""

from __future__ import annotations

import argparse
import json
import re
import sys

from prdist import params as P
from prdist.params import LARGEST_COUNT  # re-exported: prdist.cli.LARGEST_COUNT
from prdist.errors import InputError


EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_AWAITING_LABELS = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit code 2 with the project's one-line format, naming
    the closest command or option to a misspelt one ("did you mean run?")."""

    def parse_known_args(self, args=None, namespace=None):
        if self._subparsers is None:  # a command's own options: a misspelt one is named first
            self._refuse_misspelt_options(args or [])
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and not hasattr(namespace, "_unknown_in"):  # the innermost parser that saw them
            namespace._unknown_in = self  # (a sub-command's namespace is copied into its parent's)
        return namespace, extras

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = getattr(namespace, "_unknown_in", self)
            hints = [_closest(word, owner._option_string_actions) for word in extras if word.startswith("-")]
            hint = next((f" (did you mean {h}?)" for h in hints if h), "")
            owner.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        if hasattr(namespace, "_unknown_in"):
            del namespace._unknown_in
        return namespace

    def _refuse_misspelt_options(self, words) -> None:
        """Refuse an option no option of this command starts with, when one is close to it (before
        argparse would report, say, a required option as missing)."""
        for word in words:
            if word == "--":
                return
            name = word.partition("=")[0]
            if name.startswith("--") and not any(o.startswith(name) for o in self._option_string_actions):
                hint = _closest(name, self._option_string_actions)
                if hint:
                    self.error(f"unrecognized arguments: {word} (did you mean {hint}?)")

    def error(self, message):
        choice = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)$", message)
        if choice:
            hint = _closest(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
            message += f" (did you mean {hint}?)" if hint else ""
        # main() prints "prdist: error: "; a sub-command's name follows once, never "prdist: " again
        where = self.prog.partition(" ")[2]
        raise InputError(f"{where + ': ' if where else ''}{message}. Run '{self.prog} --help' for usage.")


def _closest(word: str, candidates) -> str | None:
    """The candidate closest to a misspelt ``word`` (difflib's ratio of at least 0.6), or None."""
    import difflib

    found = difflib.get_close_matches(word.partition("=")[0], list(candidates), n=1)
    return found[0] if found else None


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def _json_object_option(text: str | None, *, option: str) -> dict | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise InputError(f"{option} must be a JSON object, e.g. '{{\"anon\": false}}'. Got {text!r}.")
    return value


def _add_storage_options(add, what: str = "") -> None:
    """``--storage-options JSON``; ``what`` names the URLs it serves (e.g. "for --out")."""
    add("--storage-options", dest="storage_options", default=None, metavar="JSON",
        help=f"fsspec options{' ' + what if what else ''}, as a JSON object")


def _storage_options(args) -> dict | None:
    return _json_object_option(args.storage_options, option="--storage-options")


def _add_key_score(add, of: str = "") -> None:
    """``--key`` and ``--score``; ``of`` says whose columns (e.g. "of --resource")."""
    of = f" {of}" if of else ""
    add("--key", default="key", metavar="COL", help=f"key column{of} (default key)")
    add("--score", default="score", metavar="COL", help=f"score column{of} (default score)")


def _add_prefect_option(add) -> None:
    add(
        "--prefect", action="store_true",
        help="run as a Prefect flow run even when no Prefect API is configured (Prefect then starts a "
             "temporary server); with PREFECT_API_URL set (or a Prefect profile's), runs go there anyway",
    )  # fmt: skip


def _add_aggregate(add) -> None:
    P.AGGREGATE.add_to(
        add, help="how the verdicts of several annotators make one label: majority of each one's latest "
                  "(default; a tie is disputed), latest, or dawid-skene (fitted on the whole store; needs a key "
                  "judged by 3 or more annotators). Cannot judge never votes against a verdict: a key is "
                  "cannot judge only when nobody could judge it")


def _require_store(url: str | None, option: str, storage_options, *, first: str | None = None) -> None:
    """Refuse a label store that does not exist (a typo would read as "no labels yet"); an
    existing store may be empty."""
    if url is None:
        return
    from prdist.dataflow.labels.store import store_exists

    if not store_exists(url, storage_options=storage_options):
        raise InputError(f"No label store at {url!r} ({option}): check the path, or import labels first with "
                         f"'prdist labels import --store {url} FILE'" + (f" ({first})." if first else "."))


def count(text: str) -> int:
    """A whole-number option: digits (with an optional sign), at most :data:`LARGEST_COUNT` in size."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if abs(value) > LARGEST_COUNT:
        raise argparse.ArgumentTypeError(
            f"{text} is larger than prdist can count (at most 2^63 - 1 = {LARGEST_COUNT:,}); give a smaller number")
    return value


def _count_options_fit(parser: argparse.ArgumentParser) -> None:
    """Make every ``type=int`` option of every sub-command a :func:`count`: a number too large for
    int64 is refused in one line when the command line is read, never an OverflowError mid-run."""
    for action in parser._actions:
        if action.type is int:
            action.type = count
        for child in (action.choices or {}).values() if isinstance(action, argparse._SubParsersAction) else ():
            _count_options_fit(child)


def _shown(text: str) -> str:
    """Text naming paths (a file name may hold control characters) as the terminal shows it
    literally, line by line."""
    from prdist.redaction import terminal_text

    return "\n".join(map(terminal_text, str(text).split("\n")))


def _one_line(exc: BaseException) -> str:
    """An error's message as one line a terminal shows literally (it may quote a file's contents)."""
    from prdist.redaction import terminal_text

    # Messages quote other libraries' errors, some of which span lines; the contract is one line.
    return terminal_text(" ".join(str(exc).split()))
