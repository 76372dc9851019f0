"""``prdist compare``: compare several systems or releases that share one label store."""

from __future__ import annotations

import json
import sys

from prdist import params as P
from prdist.errors import InputError
from prdist.cli._common import (
    EXIT_AWAITING_LABELS,
    EXIT_OK,
    _add_aggregate,
    _add_key_score,
    _add_prefect_option,
    _add_storage_options,
    _require_store,
    _shown,
    _storage_options,
)
from prdist.cli._prefect import _run_flow, _say_where_it_ran


def _add_compare(sub) -> None:
    parser = sub.add_parser(
        "compare",
        help="compare several systems or releases that share one label store",
        description=(
            "Estimate the precision of several systems (or releases) at once from one budget of "
            "draws: sample every system (uniformly by default), answer from the shared label store "
            "by key, so that one label serves every system that outputs the item, and combine all "
            "draws in the joint importance-sampling estimator of Chaganty et al. (2017). Writes "
            "compare.parquet (precision with its confidence interval per system; recall with "
            "--exhaustive) into a run directory under --out and prints the directory on the last "
            "line. Exit 3 when drawn items lack labels: the run directory then holds the annotation "
            "task (annotation_task.csv / .jsonl); import the labels and run again. Drawn items nobody "
            "can judge are left out (assumed missing at random); precision_worst_low / "
            "precision_worst_high are the lowest and highest limits over every verdict they could have "
            "(exact, or an outer bound where the printed note says so)."
        ),
    )
    add = parser.add_argument
    add(
        "--system", dest="systems", action="append", required=True, metavar="NAME=URL",
        help="a system: a name and its Parquet dataset (columns key, score); repeat per system",
    )  # fmt: skip
    add("--labels", default=None, metavar="URL",
        help="the shared label store (see 'prdist labels import'); leave it out while there are no labels yet")
    P.BUDGET.add_to(add, required=True)
    P.SEED.add_to(add, required=True, default=None, help="seed of every draw (same seed, same draws)")
    add("--out", required=True, metavar="URL", help="root of the run directories (path or fsspec URL)")
    add(
        "--exhaustive", default=None, metavar="URL",
        help="keys labeled exhaustively within some scope (CSV, JSONL or Parquet with key, label), "
             "for recall; without it recall is NaN and only the pooled recall is reported",
    )  # fmt: skip
    P.DISTRIBUTION.add_to(
        add, help="what each system's precision means: uniform over its output (default), uniform over "
                  "its top --k items (precision at k), or proportional to score^--power",
    )  # fmt: skip
    P.K.add_to(add)
    P.POWER.add_to(add)
    P.ALLOCATION.add_to(
        add, help="split of the budget: even (default) or 2 each plus the rest in proportion to the systems' sizes")
    P.WEIGHTS.add_to(
        add, help="mixture weights of the joint estimator: overlap (default; the authors' heuristic) or balance")
    P.CONFIDENCE.add_to(add)
    P.COMPARE_GOLD_BUDGET.add_to(
        add, help="a random gold audit of N (>= 2) of the distinct drawn keys, listed in the annotation task (column gold_audit; "
             "import their verdicts with 'labels import --role gold'); once all are in, the precision intervals are for "
             "the precision as gold says it (recall stays as the verdicts say it)")
    _add_aggregate(add)
    add("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: in-process threads; a local cluster from 2^31 items)")
    _add_storage_options(add, "for every URL")
    _add_key_score(add, "of every system")
    _add_prefect_option(add)
    parser.set_defaults(handler=_cmd_compare)


def parse_system(text: str) -> tuple[str, str]:
    """Split a ``NAME=URL`` system option into its name and URL.

    Examples
    --------
    >>> parse_system("reverb=s3://bucket/reverb")
    ('reverb', 's3://bucket/reverb')
    """
    name, sep, url = str(text).partition("=")
    if not sep or not name or not url.strip():
        raise InputError(
            f"--system {text!r} is not NAME=URL. Write it like 'reverb=s3://bucket/systems/reverb'."
        )
    from prdist.dataflow.compare.params import check_system_name

    check_system_name(name)
    return name, url


def _cmd_compare(args) -> int:
    from prdist.dataflow.io.storage import filesystem, join_url

    # Everything checkable without reading data is checked here, under the option names.
    owner = "prdist compare"
    pairs = [parse_system(text) for text in args.systems]
    names = [name for name, _ in pairs]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise InputError(f"--system {repeated!r} is given twice; give every system its own name.")
    budget = P.BUDGET.check(args.budget, owner=owner, name=P.BUDGET.flag)
    if budget < 2 * len(pairs):
        raise InputError(
            f"--budget {budget} is too small for {len(pairs)} systems: every system needs at least 2 "
            f"draws. Use --budget {2 * len(pairs)} or more."
        )
    P.check_all(args, (P.SEED, P.CONFIDENCE, P.COMPARE_GOLD_BUDGET), owner=owner, flags=True)
    kind = args.distribution.replace("-", "_")
    if kind == "top_k" and args.k is None:
        raise InputError("--distribution top-k needs --k K, the size of the top.")
    if args.k is not None and kind != "top_k":
        raise InputError("--k only applies to --distribution top-k; drop it or add --distribution top-k.")
    if args.power is not None and kind != "score_power":
        raise InputError("--power only applies to --distribution score-power; drop it or add --distribution score-power.")
    P.check_all(args, (P.K, P.POWER), owner=owner, flags=True)
    storage_options = _storage_options(args)
    _require_store(args.labels, "--labels", storage_options, first="leave out --labels until there are labels")
    parameters = dict(
        systems=dict(pairs), budget=budget, out=args.out, labels=args.labels, seed=args.seed,
        distribution=kind, k=args.k, power=args.power, allocation=args.allocation, weights=args.weights,
        confidence=args.confidence, exhaustive=args.exhaustive, scheduler=args.scheduler, key=args.key, score=args.score,
        aggregate=args.aggregate, **({} if args.gold_budget is None else {"gold_budget": args.gold_budget}),
    )  # fmt: skip
    outcome = _run_flow("compare_systems", "compare_systems", parameters, storage_options, args)
    _say_where_it_ran(args)
    url = outcome.url
    if outcome.awaiting:
        print(_shown(url))
        print(_shown(f"prdist: {outcome.awaiting}"), file=sys.stderr)
        return EXIT_AWAITING_LABELS
    fs, path = filesystem(join_url(url, "manifest.json"), storage_options)
    with fs.open(path, "rb") as fh:
        manifest = json.load(fh)
    from prdist.render.terminal import certifies_line, compare_text

    print(compare_text(manifest))
    print(certifies_line(manifest))
    print(_shown(url))
    return EXIT_OK
