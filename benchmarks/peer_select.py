"""The peers of ``bench_peers.py``: the items at given ranks of a Parquet resource, as a user writes it.

Runs in the benchmark environment (``make bench-env``: Polars and DuckDB, which are not prdist's
dependencies), as its own process, so that its time is the whole process a user waits for:
interpreter start, imports, reading, ranking, writing the selected items.

    python benchmarks/peer_select.py --engine polars --form join RESOURCE_DIR RANKS.npy OUT.parquet

Rank r is the r-th item by descending score (continuous scores: no ties). ``--form`` picks how the
ranks are matched: ``join`` (a join with the rank table) or ``filter`` (``is_in`` / ``IN``); the
benchmark takes the faster per engine. ``--threads`` caps each engine's thread pool.
"""

from __future__ import annotations

import argparse
import os


def select_polars(resource: str, ranks, out: str, form: str, threads: int) -> None:
    os.environ["POLARS_MAX_THREADS"] = str(threads)  # read at import
    import polars as pl

    ranked = (
        pl.scan_parquet(os.path.join(resource, "*.parquet"))
        .select("key", "score", "label")
        .sort("score", descending=True)
        .with_row_index("rank", offset=1)
        .with_columns(pl.col("rank").cast(pl.Int64))
    )
    if form == "join":
        wanted = pl.LazyFrame({"rank": ranks})
        picked = ranked.join(wanted, on="rank", how="inner")
    else:
        picked = ranked.filter(pl.col("rank").is_in(pl.Series(ranks)))
    picked.sort("rank").collect().write_parquet(out)


def select_duckdb(resource: str, ranks, out: str, form: str, threads: int) -> None:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect(config={"threads": threads})
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
    parser.add_argument("--form", choices=("join", "filter"), default="join")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("resource")
    parser.add_argument("ranks", help=".npy file of int64 ranks")
    parser.add_argument("out")
    args = parser.parse_args()
    import numpy as np

    ENGINES[args.engine](args.resource, np.load(args.ranks), args.out, args.form, args.threads)


if __name__ == "__main__":
    main()
