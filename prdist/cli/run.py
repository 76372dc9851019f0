"""``prdist run``: evaluate a ranked resource (the demo without --resource)."""

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


def _add_run(sub) -> None:
    parser = sub.add_parser(
        "run",
        help="evaluate a ranked resource (the demo without --resource)",
        description=(
            "Evaluate a ranked Parquet resource: plan the labels (PAULA, random or stratified), "
            "find the planned items without sorting, take their labels from the label store (or "
            "an oracle column in simulations), bound the precision at every rank, and write one "
            "run directory (plan, bounds, report, manifest written last) under --out. Prints the "
            "run directory on the last line. Exit 3 when planned labels are missing: the run is "
            "written whole, with status 'awaiting labels' and conservative bounds, and lists the items to annotate. Without "
            "--resource, a synthetic resource with known truth is built first (the demo)."
        ),
    )
    add = parser.add_argument
    add("--resource", default=None, metavar="URL", help="Parquet dataset (path, file://, s3://, any fsspec URL)")
    add("--out", default="prdist-runs", metavar="URL", help="root of the run directories (default ./prdist-runs)")
    for param in (P.METHOD, P.EPS, P.WINDOW, P.R_TILDE):
        param.add_to(add)
    P.CONFIDENCE.add_to(
        add, type=str, default=str(P.CONFIDENCE.default), metavar="C|none",
        help="the one confidence level of every interval of the run (default {default}): PAULA bounds that hold at "
             "every rank with probability C when the verdicts are independent draws from a rate that does not rise "
             "with rank (they bound the verdicts' precision, not the truth where verdicts err), the random and "
             "stratified methods' intervals and the --bands; 'none' for the paper's deterministic PAULA bounds "
             "(PAULA without --bands only)")
    add("--labels", default=None, metavar="URL",
        help="label store (see 'prdist labels import'; it must exist, and may be empty); leave it out while there are no labels yet")
    add("--series", default=None, metavar="NAME",
        help="the line of releases this run belongs to, for 'prdist history' (default: the resource URL's parent)")
    _add_aggregate(add)
    P.ORACLE_COLUMN.add_to(add)
    P.BANDS.add_to(add)
    P.JUDGE_COLUMN.add_to(
        add, help="automatic verdicts from this column of the resource (0/1, or a probability in [0, 1]: correct from 0.5 "
             "up), standing for every planned item without an annotator verdict")
    P.GOLD_BUDGET.add_to(
        add, help="a random gold audit of N planned items, listed in the annotation task (import their verdicts with "
             "'labels import --role gold'); once all are in, the bounds hold for the precision as gold says it")
    P.SEED.add_to(add)
    add("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: in-process threads; a local cluster from 2^31 items)")
    _add_storage_options(add, "for --resource/--out/--labels")
    _add_key_score(add)
    P.DEMO_N.add_to(add)
    _add_prefect_option(add)
    parser.set_defaults(handler=_cmd_run)


def _confidence_option(text):
    if text is None or str(text).lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not P.CONFIDENCE.contains(value):
        raise InputError(f"--confidence must be a number in {P.CONFIDENCE.range_text} such as {P.CONFIDENCE.default}, "
                         f"or 'none'. Got {text!r}.")
    return value


def _cmd_run(args) -> int:
    # Checked under the option names before Prefect starts: a typo costs no flow run.
    P.check_all(args, (P.EPS, P.WINDOW, P.R_TILDE, P.SEED, P.DEMO_N), owner="prdist run", flags=True)
    confidence = _confidence_option(args.confidence)
    _check_known_quality_options(args, confidence)
    if confidence is None and (args.method != "paula" or args.bands):
        what = "--bands" if args.method == "paula" else f"--method {args.method}"
        raise InputError(f"--confidence none gives the paper's deterministic PAULA bounds, but {what} gives intervals "
                         "that hold only with a probability. Give a level, e.g. --confidence 0.95.")
    if args.series is not None and (not args.series.strip() or args.series != args.series.strip()):
        raise InputError(f"--series must be a name without surrounding blanks, e.g. '--series kb-releases'. Got {args.series!r}.")
    storage_options = _storage_options(args)
    _require_store(args.labels, "--labels", storage_options, first="leave out --labels until there are labels")
    resource, oracle = args.resource, args.oracle_column
    if resource is None:
        resource, oracle = _demo_resource(args, storage_options), oracle or "label"
    parameters = dict(
        resource=resource, out=args.out, method=args.method, eps=args.eps, window=args.window,
        r_tilde=args.r_tilde, confidence=confidence, labels=args.labels, oracle_column=oracle,
        bands=args.bands, seed=args.seed, scheduler=args.scheduler, key=args.key, score=args.score,
        aggregate=args.aggregate, series=args.series, judge_column=args.judge_column, gold_budget=args.gold_budget,
    )  # fmt: skip
    # A run that exists is found before any cluster or orchestrator starts: a no-op is instant.
    outcome = _committed_run(parameters, storage_options)
    if outcome is None:
        outcome = _run_flow("evaluate_release", "evaluate_release", parameters, storage_options, args,
                            committed=lambda: _committed_run(parameters, storage_options))
    from prdist.dataflow.run.summary import run_summary

    print(_shown(run_summary(outcome.url, storage_options=storage_options)))
    _note_exhaustive_plan(outcome.url, args, storage_options)
    print(_shown(outcome.url))
    _say_where_it_ran(args)
    if outcome.awaiting:
        print(_shown(f"prdist: {outcome.awaiting}"), file=sys.stderr)
        return EXIT_AWAITING_LABELS
    return EXIT_OK


def _check_known_quality_options(args, confidence) -> None:
    """--gold-budget: a positive count, for PAULA at a confidence level (checked before Prefect starts)."""
    if args.gold_budget is None:
        return
    P.GOLD_BUDGET.check(args.gold_budget, owner="prdist run", name=P.GOLD_BUDGET.flag)
    if args.method != "paula" or confidence is None:
        raise InputError("--gold-budget certifies PAULA's bounds against gold at a confidence level: use --method paula "
                         f"with e.g. --confidence 0.95 (got --method {args.method}, --confidence {args.confidence}).")


def _committed_run(parameters: dict, storage_options):
    """The committed run that the evaluation ``parameters`` make, or None: read, never computed.

    Imports neither Prefect nor Dask: the resource's footers give its fingerprint, the staged
    extraction its planned keys, the label store their labels, and these the run id.
    """
    from flows._runner import FlowOutcome

    from prdist.dataflow.run.evaluate import EvaluationParams
    from prdist.dataflow.run.steps import committed_run, open_for_run
    from prdist.dataflow.io.storage import run_locations
    from prdist.render.terminal import awaiting_message

    p = parameters
    params = EvaluationParams.of(p)  # as the flow builds them
    where = run_locations(p["resource"], p["out"], p["labels"], storage_options=storage_options)
    resource = open_for_run(where.resource, key=p["key"], score=p["score"], oracle_column=p["oracle_column"])
    found = committed_run(resource, params, out=where.out, labels=where.labels, series=p["series"])
    if found is None:
        return None
    return FlowOutcome(found.url, awaiting_message(found, "planned items") if found.missing else None)


def _note_exhaustive_plan(url: str, args, storage_options) -> None:
    """One stderr line when the PAULA plan labeled every item, with what coarser options save."""
    if args.method != "paula" or args.r_tilde is not None:
        return
    from prdist.dataflow.io.storage import filesystem, join_url
    from prdist.paula.plan import exhaustive_plan_note

    fs, path = filesystem(join_url(url, "manifest.json"), storage_options)
    with fs.open(path, "rb") as fh:
        n = int(json.load(fh)["n"])
    note = exhaustive_plan_note(n, eps=args.eps, window=args.window)
    if note is not None:
        print(f"prdist: note: {note}.", file=sys.stderr)


#: The accuracy of the demo resource's ``judge`` column (a noisy copy of the truth).
DEMO_JUDGE_ACCURACY = 0.9


def _demo_resource(args, storage_options) -> str:
    """The demo's synthetic resource: binormal scores, 30 % positives, sorted, with a column
    ``judge`` that is right with probability 0.9 (reused if present)."""
    from prdist import population
    from prdist.dataflow.io.storage import filesystem, join_url
    from prdist.dataflow.io.storage_errors import exists
    from prdist.dataflow.synth import read_synth_metadata

    url = join_url(args.out, f"demo-resource-binormal-{args.demo_n}-seed{args.seed}-judge{DEMO_JUDGE_ACCURACY}")
    fs, path = filesystem(url, storage_options)
    if exists(fs, path, where=url):
        read_synth_metadata(url, storage_options=storage_options)  # a complete synthetic resource, or an error
        return url
    model = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)
    parameters = dict(model=model, n=args.demo_n, out=url, order="sorted", seed=args.seed, scheduler=args.scheduler,
                      judge_accuracy=DEMO_JUDGE_ACCURACY)
    return _run_flow("synth", "synthesize_resource", parameters, storage_options, args).url
