"""``prdist history``: precision across releases."""

from __future__ import annotations

import sys

from prdist import params as P
from prdist.errors import InputError
from prdist.cli._common import (
    EXIT_OK,
    _add_storage_options,
    _one_line,
    _shown,
    _storage_options,
)


def _add_history(sub) -> None:
    parser = sub.add_parser(
        "history",
        help="precision across releases: bounds at fixed ranks, certain changes flagged",
        description=(
            "Read the committed PAULA runs under a runs root (manifests and plans only), group them "
            "into series, and write history.parquet (one row per run and rank) and history.html "
            "(the bounds at each rank across releases, named on the x-axis). Releases stand at the "
            "place in their series that each run recorded when it was made, wherever the runs are "
            "copied. A change is 'down' or 'up' only when it is certain under the bounds' assumptions; "
            "confidence bounds split their error budget over those places, so all flags of a series "
            "hold at once. Prints the output directory last."
        ),
    )
    add = parser.add_argument
    add("--runs", required=True, metavar="URL", help="root of the run directories (the --out of prdist run)")
    add("--series", default=None, metavar="NAME", help="only this series (default: every series found)")
    P.RANK.add_to(add, type=str)  # several ranks, comma-separated: each checked in _cmd_history
    add("--out", default=None, metavar="DIR",
        help="output directory (default: <runs>/_history; with --series, <runs>/_history/<series>-<hash>, "
             "so the two never overwrite each other)")
    _add_storage_options(add)
    parser.set_defaults(handler=_cmd_history)


def _cmd_history(args) -> int:
    import warnings

    from prdist.dataflow.history import DamagedRunWarning, write_history

    ranks = None
    if args.ranks is not None:
        parts = args.ranks.split(",")
        if not all(p.strip().isdigit() and P.RANK.contains(int(p)) for p in parts):
            raise InputError(f"--ranks must be ranks (whole numbers from 1 to 2^63 - 1) separated by commas, e.g. '--ranks 100,1000,10000'. Got {args.ranks!r}.")
        ranks = sorted({int(p) for p in parts})
    options = _storage_options(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DamagedRunWarning)
        out, table = write_history(args.runs, out=args.out, series=args.series, ranks=ranks, storage_options=options)
    for warning in caught:  # damaged run directories, named in one line each
        if isinstance(warning.message, DamagedRunWarning):
            print(f"prdist: warning: {_one_line(warning.message)}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    from prdist.dataflow.history import read_judge_quality
    from prdist.redaction import terminal_text
    from prdist.render.terminal import history_text, judge_lines

    print(history_text(table))
    judges = read_judge_quality(out, storage_options=options)
    lines, drifts = judge_lines(judges) if judges is not None else ([], [])
    for line in lines:
        print(terminal_text(line))
    for line in drifts:
        print(f"prdist: warning: {terminal_text(line)}", file=sys.stderr)
    from flows._runner import may_have_api

    if may_have_api():  # prdist.precision.changed for each series' newest release, with a Prefect API
        from flows.events import announce_changes
        from prdist.dataflow.history import newest_changes

        for series, rows in newest_changes(table).items():
            announce_changes(series, rows, runs=args.runs, storage_options=options)
    print(_shown(out))
    return EXIT_OK
