"""``prdist ingest``: turn CSV/TSV/JSONL/Parquet files into a ranked resource."""

from __future__ import annotations

import sys

from prdist.cli._common import EXIT_OK, _add_storage_options, _shown, _storage_options


def _add_ingest(sub) -> None:
    parser = sub.add_parser(
        "ingest",
        help="turn CSV/TSV/JSONL/Parquet files into a ranked resource for 'prdist run'",
        description=(
            "Read CSV, TSV, JSONL or Parquet files and write a resource that 'prdist run' reads: "
            "columns key (several --key columns joined with '|') and score (float64) plus the "
            "other columns, one row per key (a key held by several rows is refused with their "
            "count, unless --duplicates keep-highest), rows in rank order in row groups of 16,384 with score "
            "statistics. Bad rows are refused with their line numbers (exit 2). Each input file is "
            "read whole, in memory (several times its size on disk): split very large dumps into "
            "several files. Prints the resource's URL on the last line."
        ),
    )
    add = parser.add_argument
    add("sources", nargs="+", metavar="FILE_OR_URL", help="input files (paths or fsspec URLs), all of one layout")
    add("--out", required=True, metavar="URL", help="where the resource goes (must not exist)")
    add("--score", required=True, metavar="COL", help="the confidence-score column")
    add("--key", required=True, action="append", dest="keys", metavar="COL", help="key column; repeat for a composite key")
    add("--format", choices=("csv", "tsv", "jsonl", "parquet"), default=None, help="input format (default: from each file's extension)")
    add("--columns", default=None, metavar="NAMES", help="comma-separated column names of CSV/TSV files without a header row")
    add("--duplicates", choices=("refuse", "keep-highest"), default="refuse",
        help="a key held by several rows: refuse the input (default), or keep the row with the highest score (the count dropped is reported)")
    add("--scheduler", default=None, metavar="ADDR", help="Dask scheduler for inputs too large to sort in memory")
    _add_storage_options(add, "for the inputs and --out")
    parser.set_defaults(handler=_cmd_ingest)


def _cmd_ingest(args) -> int:
    from prdist.dataflow.ranks.ingest import IngestSpec, ingest

    options = _storage_options(args)
    columns = None if args.columns is None else tuple(c.strip() for c in args.columns.split(","))
    spec = IngestSpec(score=args.score, keys=tuple(args.keys), format=args.format, columns=columns, duplicates=args.duplicates)
    if args.scheduler is None:  # small inputs are sorted in memory; large ones on Dask's local scheduler
        result = ingest(args.sources, args.out, spec, storage_options=options)
    else:
        from prdist.dataflow.engine.cluster import dask_client

        with dask_client(args.scheduler) as client:
            result = ingest(args.sources, args.out, spec, storage_options=options, client=client)
    kept = (f"{result.duplicates:,} duplicate row(s) dropped (--duplicates keep-highest: the highest score of each key kept)"
            if args.duplicates == "keep-highest" else "every key unique")
    print(f"prdist ingest: {result.rows:,} items from {result.sources} file(s); {kept}", file=sys.stderr)
    print(_shown(result.url))
    return EXIT_OK
