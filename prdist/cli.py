"""The ``prdist`` command.

Each sub-command lives in one ``_cmd_*`` function registered in :func:`build_parser`. Errors map
to exit codes once, here: 2 for bad input (one line on stderr naming the problem and the fix),
3 when labels are awaited, 1 for anything else. ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

from .errors import AwaitingLabels, InputError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_AWAITING_LABELS = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit code 2 with the project's one-line format."""

    def error(self, message):
        raise InputError(f"{self.prog}: {message}. Run '{self.prog} --help' for usage.")


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


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
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args) or EXIT_OK)
    except AwaitingLabels as exc:
        print(f"prdist: {exc}", file=sys.stderr)
        return EXIT_AWAITING_LABELS
    except InputError as exc:
        if debug:
            traceback.print_exc()
        print(f"prdist: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("prdist: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # the last resort: one line, traceback on request
        if debug:
            traceback.print_exc()
        print(f"prdist: failed: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
