"""The peers of ``bench_peers.py``: the items at given ranks of a Parquet resource, as a user writes it.

Runs in the benchmark environment (``make bench-env``: Polars and DuckDB, which are not prdist's
dependencies), as its own process, so that its time is the whole process a user waits for:
interpreter start, imports, reading, ranking, writing the selected items.

    python benchmarks/peer_select.py --engine polars --form join RESOURCE_DIR RANKS.npy OUT.parquet

Rank r is the r-th item by descending score (continuous scores: no ties). ``--form`` picks how the
ranks are matched: ``join`` (a join with the rank table) or ``filter`` (``is_in`` / ``IN``); the
benchmark takes the faster per engine. ``streaming`` (Polars only) is the join run on Polars'
streaming engine, what its documentation offers for data larger than memory. ``--threads`` caps each
engine's thread pool; ``--memory-limit`` is DuckDB's ``memory_limit`` (it spills to a directory
beside OUT beyond it).
"""

from __future__ import annotations

import argparse
import os


def select_polars(resource: str, ranks, out: str, form: str, threads: int, memory_limit: str | None) -> None:
    os.environ["POLARS_MAX_THREADS"] = str(threads)  # read at import
    import polars as pl

    ranked = (
        pl.scan_parquet(os.path.join(resource, "*.parquet"))
        .select("key", "score", "label")
        .sort("score", descending=True)
        .with_row_index("rank", offset=1)
        .with_columns(pl.col("rank").cast(pl.Int64))
    )
    if form == "filter":
        picked = ranked.filter(pl.col("rank").is_in(pl.Series(ranks)))
    else:
        picked = ranked.join(pl.LazyFrame({"rank": ranks}), on="rank", how="inner")
    engine = "streaming" if form == "streaming" else "in-memory"
    picked.sort("rank").collect(engine=engine).write_parquet(out)


def select_duckdb(resource: str, ranks, out: str, form: str, threads: int, memory_limit: str | None) -> None:
    import duckdb
    import pyarrow as pa

    config = {"threads": threads}
    if memory_limit is not None:
        config.update(memory_limit=memory_limit, temp_directory=out + ".spill")
    con = duckdb.connect(config=config)
    con.register("wanted", pa.table({"rank": ranks}))
    source = f"read_parquet('{os.path.join(resource, '*.parquet')}')"
    ranked = f"SELECT key, score, label, row_number() OVER (ORDER BY score DESC) AS rank FROM {source}"
    if form == "join":
        query = f"SELECT r.* FROM ({ranked}) r JOIN wanted USING (rank) ORDER BY rank"
    else:
        query = f"{ranked} QUALIFY rank IN (SELECT rank FROM wanted) ORDER BY rank"
    con.execute(f"COPY ({query}) TO '{out}' (FORMAT parquet)")


ENGINES = {"polars": select_polars, "duckdb": select_duckdb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(ENGINES), required=True)
    parser.add_argument("--form", choices=("join", "filter", "streaming"), default="join")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--memory-limit", default=None, help="DuckDB's memory_limit, e.g. 12GB (default: DuckDB's own)")
    parser.add_argument("resource")
    parser.add_argument("ranks", help=".npy file of int64 ranks")
    parser.add_argument("out")
    args = parser.parse_args()
    import numpy as np

    if args.form == "streaming" and args.engine != "polars":
        parser.error("--form streaming is Polars' streaming engine")
    ENGINES[args.engine](args.resource, np.load(args.ranks), args.out, args.form, args.threads, args.memory_limit)


if __name__ == "__main__":
    main()
