"""The ``prdist`` command.

Each sub-command lives in one ``_cmd_*`` function registered in :func:`build_parser`. Errors map
to exit codes once, here: 2 for bad input (one line on stderr naming the problem and the fix),
3 when labels are awaited, 1 for anything else. ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import logging
import os
import re
import sys
import traceback

from .errors import AwaitingLabels, InputError, PrdistError

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


@functools.cache
def _names_a_prdist_error() -> re.Pattern:
    """Prefect's state messages name the exception ("... encountered an exception DataError: ...");
    this matches every prdist error class loaded by then (the filter runs once flows are imported)."""
    found, todo = set(), [PrdistError]
    while todo:
        cls = todo.pop()
        found.add(cls.__name__)
        todo += cls.__subclasses__()
    return re.compile(r"exception:? (%s)\b" % "|".join(sorted(found)))


class _OneLineForPrdistErrors(logging.Filter):
    """Keep Prefect's console records of a prdist error (task, flow, traceback) off the console.

    Such an error is the user's to fix and main() prints it as one line, once; the records stay
    in the flow run's logs on the Prefect server (the API handler sees them first), and
    ``--debug`` keeps them on the console too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        # A prdist error is printed once, by main(), in the command line's terms: the task's and
        # the flow's records of it (with or without a traceback) stay on the Prefect server.
        if record.exc_info and isinstance(record.exc_info[1], PrdistError):
            return False
        # A Prefect API that stopped answering: main() says so in one line (and a run that
        # committed before stands, _run_flow); the engine's traceback of it is noise on the console.
        if record.exc_info and type(record.exc_info[1]).__module__.split(".")[0] in ("httpx", "httpcore"):
            return False
        if record.name.startswith("prefect") and _names_a_prdist_error().search(record.getMessage()):
            return False
        # s3fs caches its clients; closing one that an earlier event loop created makes
        # aiobotocore log "Task exception was never retrieved" at garbage collection. It is
        # cleanup noise, never a failure of the run, so the console does not show it.
        if record.name == "asyncio" and "ClientCreatorContext.__aexit__" in record.getMessage():
            return False
        return True


def _quiet_prefect_console(args) -> None:
    """Install :class:`_OneLineForPrdistErrors` on Prefect's console handlers (after Prefect is imported)."""
    if args.debug:
        return
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(isinstance(f, _OneLineForPrdistErrors) for f in handler.filters):
            handler.addFilter(_OneLineForPrdistErrors())


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def _add_budget(sub) -> None:
    parser = sub.add_parser(
        "budget",
        help="how many labels PAULA and the sampling baselines need",
        description=(
            "Print the size of the PAULA annotation plan for a resource of N items and, for the "
            "same guaranteed approximation factor, the labels uniform random sampling (PAULA "
            "paper Eq. 5) and logarithmic stratified sampling (Theorem 2) would need. Nothing is "
            "read or written."
        ),
    )
    add = parser.add_argument
    add("--n", type=int, required=True, metavar="N", help="number of items in the resource")
    add("--eps", type=float, default=0.03, metavar="E", help="grid spacing in (0, 1] (default 0.03)")
    add("--window", type=int, default=100, metavar="D", help="local-precision window (default 100)")
    add(
        "--r-tilde", dest="r_tilde", type=int, default=None, metavar="R",
        help="rank beyond which precision is assumed monotone (default ceil((D+2)/E))",
    )  # fmt: skip
    add(
        "--alpha", type=float, default=None, metavar="A",
        help="relative error of random sampling (default: PAULA's factor - 1, the same guarantee)",
    )  # fmt: skip
    add(
        "--p-min", dest="p_min", type=float, default=0.5, metavar="P",
        help="assumed minimum precision, for the sampling baselines (default 0.5)",
    )  # fmt: skip
    add(
        "--delta", type=float, default=0.05, metavar="D",
        help="failure probability of the sampling baselines (default 0.05)",
    )  # fmt: skip
    add("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(handler=_cmd_budget)


def _cmd_budget(args) -> int:
    # Imported here so that other sub-commands do not pay for SciPy at start-up.
    import math

    from ._validation import check_float, check_int
    from .plan import plan_paula
    from .sampling import random_sampling_budget, random_sampling_reliable_from, stratified_budget

    # Checked under the option names, so that a message names what the user typed.
    owner = "prdist budget"
    unit = dict(low=0.0, high=1.0, low_open=True)
    n = check_int(args.n, name="--n", owner=owner, low=1)
    check_float(args.eps, name="--eps", owner=owner, **unit)
    window = check_int(args.window, name="--window", owner=owner, low=1)
    if args.r_tilde is not None:
        check_int(args.r_tilde, name="--r-tilde", owner=owner, low=1)
    if args.alpha is not None:
        check_float(args.alpha, name="--alpha", owner=owner, low=0.0, low_open=True)
    p_min = check_float(args.p_min, name="--p-min", owner=owner, **unit)
    delta = check_float(args.delta, name="--delta", owner=owner, high_open=True, **unit)

    plan = plan_paula(n, eps=args.eps, window=window, r_tilde=args.r_tilde)
    notes = list(plan.notes)
    finite = math.isfinite(plan.factor)
    alpha = args.alpha if args.alpha is not None else (plan.factor - 1.0 if finite else None)
    random_annotations = reliable_from = stratified = None
    if alpha is not None:
        random_annotations = random_sampling_budget(n, alpha=alpha, p=p_min, delta=delta)
        if not plan.exhaustive:
            reliable_from = random_sampling_reliable_from(
                n, size=plan.size, alpha=alpha, p=p_min, delta=delta
            )
    if plan.exhaustive:
        notes.append(f"n <= g_l = {plan.g_l}: every item is labeled and the precision is exact.")
    if finite:
        stratified = stratified_budget(
            n, eps=args.eps, window=window, r_tilde=args.r_tilde, delta=delta, p_min=p_min
        )
    else:
        notes.append(
            f"gamma is infinite (m={plan.m} <= 0): there is no finite guarantee for the sampling "
            "baselines to match" + ("." if alpha is None else "; random sampling uses --alpha.")
        )
    result = {
        "n": n,
        "eps": plan.eps,
        "window": window,
        "r_tilde": plan.r_tilde,
        "l": plan.l,
        "L": plan.L,
        "g_l": plan.g_l,
        "m": plan.m,
        "gamma": plan.gamma if finite else None,  # JSON has no Infinity
        "factor": plan.factor if finite else None,
        "annotations": plan.size,
        "alpha": alpha,
        "p_min": p_min,
        "delta": delta,
        "random_sampling_annotations": random_annotations,
        "random_sampling_reliable_from": reliable_from,
        "stratified_annotations": None if stratified is None else stratified.annotations,
        "stratified_samples_per_point": None if stratified is None else stratified.samples_per_point,
        "stratified_expected_distinct": (
            None if stratified is None else round(stratified.expected_distinct, 1)
        ),
        "precondition_met": plan.precondition_met,
        "notes": notes,
    }
    if args.json:
        _print_json(result)
    else:
        _print_budget_table(result, plan)
    return EXIT_OK


def _print_budget_table(result: dict, plan) -> None:
    """``prdist budget``'s table: every figure with what it means."""

    def text(key, fmt="{}"):
        return "n/a" if result[key] is None else fmt.format(result[key])

    n, window = result["n"], result["window"]
    baseline = f"p_min {result['p_min']:g}, delta {result['delta']:g}"
    rows = [
        ("r_tilde", text("r_tilde"), "rank beyond which precision is assumed monotone"),
        ("l, L", f"{plan.l}, {plan.L}", "first and last grid index; g_j = ceil((1+eps)^j)"),
        ("g_l", text("g_l"), "ranks 1..g_l are all labeled"),
        ("m", text("m"), "monotonicity spacing, floor(eps (1+eps)^l - 1)"),
        ("gamma", text("gamma", "{:.4f}"), "PAULA's factor at grid points, 1 + eps + (2+eps)/m"),
        ("factor", text("factor", "{:.4f}"), "guaranteed approximation at every rank, gamma (1+eps)"),
        ("annotations", text("annotations"), "PAULA: g_l + window (L - l) chosen ranks"),
        (
            "random_sampling_annotations",
            text("random_sampling_annotations"),
            f"uniform sampling, paper Eq. 5 (alpha {text('alpha', '{:.4g}')}, {baseline})",
        ),
        (
            "random_sampling_reliable_from",
            text("random_sampling_reliable_from"),
            "first rank a uniform sample of PAULA's size covers (Eq. 4; above n: none)",
        ),
        (
            "stratified_annotations",
            text("stratified_annotations"),
            f"stratified sampling, Theorem 2 (beta = gamma, {baseline})",
        ),
        (
            "stratified_expected_distinct",
            text("stratified_expected_distinct", "{:.0f}"),
            "expected distinct ranks a stratified plan labels",
        ),
    ]
    name_width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    print(f"prdist budget: n = {n:,}, eps = {plan.eps:g}, window = {window}")
    for name, value, meaning in rows:
        print(f"  {name:<{name_width}}  {value:>{value_width}}  {meaning}")
    print(f"precondition met: {'yes' if plan.precondition_met else 'no'}")
    for note in result["notes"]:
        print(f"note: {note}")


# Model options of `prdist synth` when none are given: the cases of Hughes-Oliver's paper.
_SYNTH_DEFAULTS = {
    "binormal": ("0,1", "1,1"),
    "bilognormal": ("0,1", "1,1"),
    "bibeta": ("2,5", "5,2"),  # Case C
    "uniform": ("0,1", "0.5,1.5"),  # Case D
    "discrete": ("0.05,0.1,0.15,0.2,0.25,0.3,0.4,0.5,0.6,0.7", "0.2,0.35,0.5,0.75,0.9"),  # Case F
}


def _add_synth(sub) -> None:
    parser = sub.add_parser(
        "synth",
        help="write a synthetic resource with known precision",
        description=(
            "Write N i.i.d. items (key, score, label) of a population score model as a Parquet "
            "dataset, in rank order (sorted, without a sort) or in random order, in parallel with "
            "Dask. The model is recorded in the files' metadata, so the resource carries its "
            "exact precision curve. Prints the dataset URL on the last line."
        ),
    )
    add = parser.add_argument
    add("--model", choices=sorted(_SYNTH_DEFAULTS), default="binormal", help="score model (default binormal)")
    add(
        "--neg", default=None, metavar="A,B",
        help="negative-class parameters: mean,sd (binormal; bilognormal: of the log score), a,b "
             "(bibeta), low,high (uniform) or a list of score values (discrete). Default 0,1 / 0,1 / "
             "2,5 / 0,1 / Hughes-Oliver's Case F. Write --neg=-1,1 when the first number is negative",
    )  # fmt: skip
    add(
        "--pos", default=None, metavar="A,B",
        help="positive-class parameters, as --neg (default 1,1 / 1,1 / 5,2 / 0.5,1.5 / Case F)",
    )  # fmt: skip
    add(
        "--bump", default=None, metavar="MU,SD,W",
        help="move a share W of the positives into a normal bump N(MU, SD^2): precision then is "
             "not monotone in rank (continuous models only; write --bump=-2,0.3,0.2)",
    )  # fmt: skip
    add("--prevalence", type=float, default=0.5, metavar="P", help="share of positives, in (0, 1) (default 0.5)")
    add("--n", type=int, required=True, metavar="N", help="number of items")
    add("--partitions", type=int, default=None, metavar="K", help="number of Parquet files (default: one per 2^22 items)")
    add("--order", choices=("sorted", "shuffled"), default="sorted", help="row order (default sorted: rank order)")
    add("--seed", type=int, required=True, metavar="S", help="master seed (same seed, same resource)")
    add("--key-offset", dest="key_offset", type=int, default=0, metavar="K",
        help="keys of generation positions K..K+N-1 (default 0): releases given disjoint ranges share no key")
    add("--judge-accuracy", dest="judge_accuracy", type=float, default=None, metavar="A",
        help="add a column 'judge': each item's label, flipped with probability 1-A independently (seeded by "
             "--seed), in (0, 1]; for 'prdist run --judge-column judge' (default: no judge column)")
    add("--out", required=True, metavar="URL", help="destination path or fsspec URL (s3://...); must not exist")
    _add_storage_options(add, "for --out")
    add("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: local threads)")
    parser.set_defaults(handler=_cmd_synth)


def _parse_numbers(text: str, *, option: str, model: str, count: int | None, example: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = None
    if values is None or (count is not None and len(values) != count):
        shape = f"{count} comma-separated numbers" if count else "comma-separated numbers"
        raise InputError(f"{option} for --model {model} must be {shape}, e.g. {example!r}. Got {text!r}.")
    return values


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


def _cmd_synth(args) -> int:
    import contextlib

    from . import population
    from ._validation import check_float, check_int
    from .dataflow.cluster import dask_client
    from .dataflow.synth import write_synthetic

    owner = "prdist synth"
    n = check_int(args.n, name="--n", owner=owner, low=1)
    if args.partitions is not None:
        check_int(args.partitions, name="--partitions", owner=owner, low=1, high=n)
    check_int(args.seed, name="--seed", owner=owner, low=0)
    check_int(args.key_offset, name="--key-offset", owner=owner, low=0, high=2**62 - n)
    if args.judge_accuracy is not None:
        check_float(args.judge_accuracy, name="--judge-accuracy", owner=owner, low=0.0, high=1.0, low_open=True)
    storage_options = _storage_options(args)
    count = None if args.model == "discrete" else 2
    classes = {}
    for option, given, default in zip(("--neg", "--pos"), (args.neg, args.pos), _SYNTH_DEFAULTS[args.model]):
        classes[option[2:]] = _parse_numbers(given or default, option=option, model=args.model, count=count, example=default)
    model = getattr(population, args.model)(**classes, prevalence=args.prevalence)
    if args.bump is not None:
        if args.model == "discrete":
            raise InputError("--bump needs a continuous model; drop it or choose --model binormal, bibeta, ...")
        bump = _parse_numbers(args.bump, option="--bump", model=args.model, count=3, example="-2,0.3,0.2")
        model = population.bumped(model, bump=bump)

    with contextlib.ExitStack() as stack:
        # Without --scheduler, Dask's local threads: generation and Parquet encoding release the
        # GIL, and no cluster has to start.
        client = stack.enter_context(dask_client(args.scheduler)) if args.scheduler else None
        resource = write_synthetic(
            model, n=n, out=args.out, partitions=args.partitions, order=args.order, seed=args.seed,
            storage_options=storage_options, client=client, key_offset=args.key_offset,
            judge_accuracy=args.judge_accuracy,
        )  # fmt: skip
    files = resource.partitions
    print(f"prdist synth: {resource.n:,} items of {model!r}, {resource.order}, {files} file(s)")
    print(_shown(resource.url))
    return EXIT_OK


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
    add("--method", choices=("paula", "random", "stratified"), default="paula", help="annotation plan (default paula)")
    add("--eps", type=float, default=0.03, metavar="E", help="grid spacing eps in (0, 1] (default 0.03)")
    add("--window", type=int, default=100, metavar="D", help="local-precision window (default 100)")
    add("--r-tilde", dest="r_tilde", type=int, default=None, metavar="R", help="fully labeled prefix target (default ceil((D+2)/E))")
    add("--confidence", default="0.95", metavar="C|none",
        help="the one confidence level of every interval of the run (default 0.95): PAULA bounds that hold at "
             "every rank with probability C when the verdicts are independent draws from a rate that does not rise "
             "with rank (they bound the verdicts' precision, not the truth where verdicts err), the random and "
             "stratified methods' intervals and the --bands; 'none' for the paper's deterministic PAULA bounds "
             "(PAULA without --bands only)")
    add("--labels", default=None, metavar="URL",
        help="label store (see 'prdist labels import'; it must exist, and may be empty); leave it out while there are no labels yet")
    add("--series", default=None, metavar="NAME",
        help="the line of releases this run belongs to, for 'prdist history' (default: the resource URL's parent)")
    _add_aggregate(add)
    add("--oracle-column", dest="oracle_column", default=None, metavar="COL", help="simulation: take labels from this column of the resource")
    add("--bands", action="store_true", help="also draw a random arm and compute bootstrap confidence bands")
    add("--judge-column", dest="judge_column", default=None, metavar="COL",
        help="automatic verdicts from this column of the resource (0/1, or a probability in [0, 1]: correct from 0.5 "
             "up), standing for every planned item without an annotator verdict")
    add("--gold-budget", dest="gold_budget", type=int, default=None, metavar="N",
        help="a random gold audit of N planned items, listed in the annotation task (import their verdicts with "
             "'labels import --role gold'); once all are in, the bounds hold for the precision as gold says it")
    add("--seed", type=int, default=0, metavar="S", help="seed of every random draw (default 0)")
    add("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: in-process threads; a local cluster from 2^31 items)")
    _add_storage_options(add, "for --resource/--out/--labels")
    _add_key_score(add)
    add("--demo-n", dest="demo_n", type=int, default=2_000_000, metavar="N", help="items of the demo's synthetic resource (default 2,000,000)")
    _add_prefect_option(add)
    parser.set_defaults(handler=_cmd_run)


def _confidence_option(text):
    if text is None or str(text).lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise InputError(f"--confidence must be a number in (0, 1) such as 0.95, or 'none'. Got {text!r}.")
    return value


def _cmd_run(args) -> int:
    from ._validation import check_float, check_int

    # Checked under the option names before Prefect starts: a typo costs no flow run.
    owner = "prdist run"
    check_float(args.eps, name="--eps", owner=owner, low=0.0, high=1.0, low_open=True)
    check_int(args.window, name="--window", owner=owner, low=1)
    if args.r_tilde is not None:
        check_int(args.r_tilde, name="--r-tilde", owner=owner, low=1)
    check_int(args.seed, name="--seed", owner=owner, low=0)
    check_int(args.demo_n, name="--demo-n", owner=owner, low=1)
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
    from .dataflow.summary import run_summary

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
    from ._validation import check_int

    check_int(args.gold_budget, name="--gold-budget", owner="prdist run", low=1)
    if args.method != "paula" or confidence is None:
        raise InputError("--gold-budget certifies PAULA's bounds against gold at a confidence level: use --method paula "
                         f"with e.g. --confidence 0.95 (got --method {args.method}, --confidence {args.confidence}).")


def _committed_run(parameters: dict, storage_options):
    """The committed run that the evaluation ``parameters`` make, or None: read, never computed.

    Imports neither Prefect nor Dask: the resource's footers give its fingerprint, the staged
    extraction its planned keys, the label store their labels, and these the run id.
    """
    from flows._runner import FlowOutcome

    from .dataflow.evaluate import EvaluationParams
    from .dataflow.run import committed_run, open_for_run
    from .dataflow.summary import awaiting_message

    p = parameters
    params = EvaluationParams(
        method=p["method"], eps=p["eps"], window=p["window"], r_tilde=p["r_tilde"], confidence=p["confidence"],
        seed=p["seed"], oracle_column=p["oracle_column"], bands=p["bands"], aggregate=p["aggregate"],
        judge_column=p["judge_column"], gold_budget=p["gold_budget"],
    )  # fmt: skip, as the flow builds them
    resource = open_for_run(p["resource"], storage_options=storage_options, key=p["key"], score=p["score"], oracle_column=p["oracle_column"])
    found = committed_run(resource, params, out=p["out"], labels=p["labels"], series=p["series"])
    if found is None:
        return None
    return FlowOutcome(found.url, awaiting_message(found, "planned items") if found.missing else None)


def _run_flow(module: str, name: str, parameters: dict, storage_options, args, committed=None):
    """Run the flow ``flows.<module>.<name>``: on the configured Prefect API (or with --prefect),
    else its body in-process (:func:`flows._runner.run_flow`).

    ``committed`` (optional) returns the run the flow commits, or None. A flow run that fails for
    a reason other than prdist's own errors (a Prefect server that stopped answering) after its
    run committed is the committed run, with one warning line: the run stands, its record on the
    server may be incomplete.
    """
    from flows._runner import run_flow

    if _on_prefect(args):
        from flows._policies import sealed  # Prefect records flow parameters: credentials go sealed

        importlib.import_module(f"flows.{module}")  # imports Prefect, which sets up its console logging
        _quiet_prefect_console(args)  # before a failing task logs its traceback there
        try:
            return run_flow(module, name, {**parameters, "storage_options": sealed(storage_options)}, on_prefect=True)
        except Exception as exc:
            found = None if committed is None or isinstance(exc, PrdistError) else committed()
            if found is None:
                raise
            print(f"prdist: warning: the Prefect flow run failed after its run committed ({type(exc).__name__}: "
                  f"{_one_line(exc)}); the run stands, its record on the Prefect server may be incomplete", file=sys.stderr)
            return found
    return run_flow(module, name, {**parameters, "storage_options": storage_options}, on_prefect=False)


def _on_prefect(args) -> bool:
    """Whether this command's flows run on Prefect: --prefect or a configured API (decided once)."""
    if getattr(args, "on_prefect", None) is None:
        from flows._runner import configured_api, may_have_api

        args.on_prefect = bool(args.prefect or (may_have_api() and configured_api()))
        if "prefect" in sys.modules:
            _quiet_prefect_console(args)  # Prefect, once imported, logs to the console on either runner
    return args.on_prefect


def _say_where_it_ran(args) -> None:
    """After a flow ran in-process, one stderr line says so (after: an error stays the only line)."""
    if getattr(args, "on_prefect", None) is False:
        from flows._runner import IN_PROCESS_NOTE

        print(f"prdist: {IN_PROCESS_NOTE}", file=sys.stderr)


def _note_exhaustive_plan(url: str, args, storage_options) -> None:
    """One stderr line when the PAULA plan labeled every item, with what coarser options save."""
    if args.method != "paula" or args.r_tilde is not None:
        return
    from .dataflow.storage import filesystem, join_url
    from .plan import exhaustive_plan_note

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
    from . import population
    from .dataflow.storage import exists, filesystem, join_url
    from .dataflow.synth import read_synth_metadata

    url = join_url(args.out, f"demo-resource-binormal-{args.demo_n}-seed{args.seed}-judge{DEMO_JUDGE_ACCURACY}")
    fs, path = filesystem(url, storage_options)
    if exists(fs, path, where=url):
        read_synth_metadata(url, storage_options=storage_options)  # a complete synthetic resource, or an error
        return url
    model = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)
    parameters = dict(model=model, n=args.demo_n, out=url, order="sorted", seed=args.seed, scheduler=args.scheduler,
                      judge_accuracy=DEMO_JUDGE_ACCURACY)
    return _run_flow("synth", "synthesize_resource", parameters, storage_options, args).url


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
    add("--budget", type=int, required=True, metavar="N", help="total draws over all systems, at least 2 per system")
    add("--seed", type=int, required=True, metavar="S", help="seed of every draw (same seed, same draws)")
    add("--out", required=True, metavar="URL", help="root of the run directories (path or fsspec URL)")
    add(
        "--exhaustive", default=None, metavar="URL",
        help="keys labeled exhaustively within some scope (CSV, JSONL or Parquet with key, label), "
             "for recall; without it recall is NaN and only the pooled recall is reported",
    )  # fmt: skip
    add(
        "--distribution", choices=("uniform", "top-k", "score-power"), default="uniform",
        help="what each system's precision means: uniform over its output (default), uniform over "
             "its top --k items (precision at k), or proportional to score^--power",
    )  # fmt: skip
    add("--k", type=int, default=None, metavar="K", help="size of the top, for --distribution top-k")
    add("--power", type=float, default=None, metavar="A", help="exponent, for --distribution score-power (default 1)")
    add(
        "--allocation", choices=("even", "proportional"), default="even",
        help="split of the budget: even (default) or 2 each plus the rest in proportion to the systems' sizes",
    )  # fmt: skip
    add(
        "--weights", choices=("overlap", "balance"), default="overlap",
        help="mixture weights of the joint estimator: overlap (default; the authors' heuristic) or balance",
    )  # fmt: skip
    add("--confidence", type=float, default=0.95, metavar="C", help="level of the intervals, in (0, 1) (default 0.95)")
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
    from .dataflow.compare_params import check_system_name

    check_system_name(name)
    return name, url



def _cmd_compare(args) -> int:
    from ._validation import check_float, check_int
    from .dataflow.storage import filesystem, join_url

    # Everything checkable without reading data is checked here, under the option names.
    owner = "prdist compare"
    pairs = [parse_system(text) for text in args.systems]
    names = [name for name, _ in pairs]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise InputError(f"--system {repeated!r} is given twice; give every system its own name.")
    budget = check_int(args.budget, name="--budget", owner=owner, low=1)
    if budget < 2 * len(pairs):
        raise InputError(
            f"--budget {budget} is too small for {len(pairs)} systems: every system needs at least 2 "
            f"draws. Use --budget {2 * len(pairs)} or more."
        )
    check_int(args.seed, name="--seed", owner=owner, low=0)
    check_float(args.confidence, name="--confidence", owner=owner, low=0.0, high=1.0, low_open=True, high_open=True)
    kind = args.distribution.replace("-", "_")
    if kind == "top_k" and args.k is None:
        raise InputError("--distribution top-k needs --k K, the size of the top.")
    if args.k is not None and kind != "top_k":
        raise InputError("--k only applies to --distribution top-k; drop it or add --distribution top-k.")
    if args.power is not None and kind != "score_power":
        raise InputError("--power only applies to --distribution score-power; drop it or add --distribution score-power.")
    if args.k is not None:
        check_int(args.k, name="--k", owner=owner, low=1)
    if args.power is not None:
        check_float(args.power, name="--power", owner=owner, low=0.0, low_open=True)
    storage_options = _storage_options(args)
    _require_store(args.labels, "--labels", storage_options, first="leave out --labels until there are labels")
    parameters = dict(
        systems=dict(pairs), budget=budget, out=args.out, labels=args.labels, seed=args.seed,
        distribution=kind, k=args.k, power=args.power, allocation=args.allocation, weights=args.weights,
        confidence=args.confidence, exhaustive=args.exhaustive, scheduler=args.scheduler, key=args.key, score=args.score,
        aggregate=args.aggregate,
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
    counts, params = manifest["counts"], manifest["params"]
    level = f"{100 * params['confidence']:g} %"
    print(
        f"prdist compare: {len(manifest['systems'])} systems, {counts['draws']:,} draws, "
        f"{counts['annotations']:,} distinct items labeled ({level} intervals, {params['weights']} weights)"
    )
    width = max(len("system"), *(len(row["system"]) for row in manifest["results"]))
    print(f"  {'system':<{width}}  precision  {level + ' interval':<16}  recall  pooled recall  draws")

    def number(value):
        return "n/a" if value is None else f"{value:.3f}"

    for row in manifest["results"]:
        interval = f"[{row['precision_ci_low']:.3f}, {row['precision_ci_high']:.3f}]"
        print(
            f"  {row['system']:<{width}}  {row['precision']:>9.3f}  {interval:<16}  {number(row['recall']):>6}  "
            f"{number(row['pooled_recall']):>13}  {row['n_samples']:>5}"
        )
    for note in manifest["diagnostics"].get("notes", []):
        print(f"note: {note}")
    print(_shown(url))
    return EXIT_OK


def _add_aggregate(add) -> None:
    from .label_choices import AGGREGATIONS  # not verdicts: that loads pandas, for --help too

    add("--aggregate", choices=AGGREGATIONS, default="majority",
        help="how the verdicts of several annotators make one label: majority of each one's latest "
             "(default; a tie is disputed), latest, or dawid-skene (fitted on the whole store; needs a key "
             "judged by 3 or more annotators). Cannot judge never votes against a verdict: a key is "
             "cannot judge only when nobody could judge it")


def _add_labels(sub) -> None:
    from .label_choices import LABEL_FORMATS as FORMATS, ROLES

    parser = sub.add_parser(
        "labels",
        help="import verdicts into a label store, see its status, or export a run's annotation task",
        description=(
            "The label store is append-only Parquet of verdict records (key, verdict, annotator, time, "
            "source, role: annotator, judge or gold), shared by every release and system. A verdict is correct, "
            "incorrect or cannot judge."
        ),
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    actions.required = True
    imp = actions.add_parser("import", help="append label files or annotation-tool exports to a store")
    imp.add_argument("--store", required=True, metavar="URL", help="the label store (created if absent)")
    imp.add_argument("files", nargs="+", metavar="FILE", help="label files; every file is validated before anything is written")
    imp.add_argument("--format", dest="fmt", choices=FORMATS, default="auto",
                     help="the files' format (default auto: detected from the content)")
    imp.add_argument("--positive", action="append", default=[], metavar="V", help="a tool's word for 'correct' (repeatable)")
    imp.add_argument("--negative", action="append", default=[], metavar="V", help="a tool's word for 'incorrect' (repeatable)")
    imp.add_argument("--skip", action="append", default=[], metavar="V", help="a tool's word for 'cannot judge' (repeatable)")
    imp.add_argument("--annotator", default=None, help="who labeled (when the files do not say)")
    imp.add_argument("--control", default=None, metavar="NAME",
                     help="the question that holds the verdict: Label Studio control (from_name), MTurk answer, "
                          "Argilla question or a plain file's column (default: the one named verdict, label, answer, "
                          "judgement, judgment or correct, else the only one; a plain file's: label)")
    imp.add_argument("--key-field", dest="key_field", default=None, metavar="PATH",
                     help="where each record holds the item key: a dotted path such as data.id, meta.key or "
                          "_input_hash, or a column (default: key, as prdist's tasks have it)")
    imp.add_argument("--annotator-map", dest="annotator_map", default=None, metavar="FILE",
                     help='annotator ids to people: a JSON object {"id": "person"} or a CSV id,annotator '
                          "(one person under several ids is one annotator)")
    imp.add_argument("--role", choices=ROLES, default="annotator",
                     help="the verdicts' source (default annotator): judge = automatic verdicts that stand where no "
                          "annotator judged; gold = expert adjudications, kept apart, that the bounds certify against")
    imp.add_argument(
        "--resource", default=None, metavar="URL",
        help="refuse labels for keys this Parquet resource does not hold (reads its key column once); "
             "without it any key is accepted, as one store serves many resources",
    )  # fmt: skip
    _add_key_score(imp.add_argument, "of --resource")
    _add_storage_options(imp.add_argument)
    imp.set_defaults(handler=_cmd_labels_import)
    exp = actions.add_parser("export", help="write the items a run still needs labeled, for an annotation tool")
    exp.add_argument("--run", required=True, metavar="DIR",
                     help="a run directory printed by 'prdist run' or 'prdist compare', or their --out: its newest run")
    exp.add_argument("--out", required=True, metavar="FILE", help="target file (.csv, .jsonl, .parquet; .json for label-studio)")
    exp.add_argument("--format", dest="fmt", choices=("csv", "jsonl", "parquet", "label-studio"), default=None,
                     help="default: from the file name; label-studio writes tasks plus FILE.xml, the labeling config")
    exp.add_argument("--show-score", dest="show_score", action="store_true",
                     help="show score and rank (of a comparison: each system's score, the systems and the draws) "
                          "to annotators (hidden by default: they bias the verdict)")
    exp.add_argument("--join", default=None, metavar="FILE",
                     help="add the columns of this CSV (.csv) or tab-separated file to each item whose values in the "
                          "columns both have match, e.g. a sentence's text by its id")
    exp.add_argument("--join-columns", dest="join_columns", default=None, metavar="NAMES",
                     help="comma-separated column names of a --join file without a header row, e.g. sentence,text")
    _add_storage_options(exp.add_argument)
    exp.set_defaults(handler=_cmd_labels_export)
    _add_labels_fill(actions)
    st = actions.add_parser(
        "status", help="items, verdicts by kind, annotators, agreement and disputed keys of a store, "
                       "records per role and the judges' agreement with gold",
        description="Counts of the store's items, records and verdicts by kind, the keys whose records disagree, "
                    "Krippendorff's alpha (cannot judge counts as missing), a table of the annotators with the most "
                    f"records and the disputed keys one per line (each cut at {STATUS_SHOWN}; --json lists all), the "
                    "records per role (annotator, judge, gold) and the judges' agreement with gold. Verdicts are "
                    "those of the whole store whatever --resource counts: dawid-skene is fitted on all of it.",
    )  # fmt: skip
    st.add_argument("--store", required=True, metavar="URL", help="the label store")
    st.add_argument("--resource", default=None, metavar="URL", help="count only the keys this Parquet resource holds")
    _add_aggregate(st.add_argument)
    st.add_argument("--json", action="store_true",
                    help="print one JSON object instead of text: every count, every annotator with their records by "
                         "verdict (annotator_verdicts), the disputed keys as a list")
    _add_key_score(st.add_argument, "of --resource")
    _add_storage_options(st.add_argument)
    st.set_defaults(handler=_cmd_labels_status)


def _add_labels_fill(actions) -> None:
    fill = actions.add_parser(
        "fill", help="fill an annotation task's empty labels from a file of verdicts, and the rest with one verdict",
        description="Fill the empty label cells of an annotation task (CSV or JSON Lines, as 'prdist labels export' "
                    "writes it): first from a file of verdicts a team already has (--from: each item takes the --label "
                    "value of the row that agrees with it in every column the two share), then every label still "
                    "empty with --rest (e.g. 'cannot judge'). Labels already given are kept. Writes the filled task "
                    "to --out, for 'prdist labels import'; prints how many labels came from where, and --out last.")
    fill.add_argument("task", metavar="TASK", help="the annotation task (.csv or .jsonl)")
    fill.add_argument("--out", required=True, metavar="FILE", help="the filled task (.csv or .jsonl)")
    fill.add_argument("--from", dest="source", default=None, metavar="FILE",
                      help="verdicts: a CSV (.csv) or tab-separated file with a --label column and columns of the task")
    fill.add_argument("--from-columns", dest="source_columns", default=None, metavar="NAMES",
                      help="comma-separated column names of a --from file without a header row, e.g. label,sentence,arg1")
    fill.add_argument("--label", default="label", metavar="COL", help="the --from column holding the verdicts (default label)")
    fill.add_argument("--rest", default=None, metavar="VERDICT",
                      help="the verdict for every label still empty, e.g. 'cannot judge' (default: leave them empty)")
    _add_storage_options(fill.add_argument)
    fill.set_defaults(handler=_cmd_labels_fill)


def _cmd_labels_import(args) -> int:
    from .dataflow.label_formats import Layout
    from .dataflow.labels import import_labels, read_annotator_map
    from .redaction import terminal_text
    from .verdicts import VerdictWords

    options = _storage_options(args)
    words = VerdictWords(positive=tuple(args.positive), negative=tuple(args.negative), skip=tuple(args.skip))
    people = read_annotator_map(args.annotator_map, storage_options=options) if args.annotator_map else None
    summary = import_labels(args.store, args.files, storage_options=options, annotator=args.annotator,
                            resource=args.resource, key=args.key, score=args.score, words=words, annotators=people,
                            layout=Layout(fmt=args.fmt, control=args.control, key_field=args.key_field),
                            role=args.role)
    role = "" if args.role == "annotator" else f"{args.role} "
    print(f"prdist labels: {summary.labels:,} {role}verdicts on {summary.keys:,} keys by {summary.annotators:,} annotator(s) "
          f"({summary.positives:,} correct, {summary.negatives:,} incorrect, {summary.cannot_judge:,} cannot judge) from {len(summary.files)} file(s) "
          f"[{', '.join(dict.fromkeys(summary.formats))}]")
    print(f"skipped: {summary.skipped_text() or 'none'}")
    for note in summary.notes:
        print(f"note: {terminal_text(note)}")
    from flows._runner import may_have_api

    if may_have_api():  # prdist.labels.imported, when a Prefect API is configured (then Prefect is imported)
        from flows.events import announce_labels

        announce_labels(args.store, count=summary.labels, keys=summary.keys, files=len(summary.files))
    print(_shown(summary.written))
    return EXIT_OK


def _cmd_labels_export(args) -> int:
    from .dataflow.labels import newest_run, write_annotation_file

    options = _storage_options(args)
    if args.join_columns is not None and args.join is None:
        raise InputError("--join-columns names the columns of a --join file: give --join FILE too, or leave it out.")
    joins = [] if args.join is None else [(_text_table(args.join, args.join_columns, "--join-columns", options), args.join)]
    run = newest_run(args.run, storage_options=options)
    done = write_annotation_file(run, args.out, storage_options=options, fmt=args.fmt, show_score=args.show_score,
                                 joins=joins)
    print(_shown(f"prdist labels: {done.items:,} item(s) to annotate, from the run {run}"))
    if done.unjoined:
        print(_shown(f"prdist labels: {done.unjoined:,} of them without joined text (no --join row matches them)"))
    print(_shown(args.out))
    return EXIT_OK


def _text_table(url: str, names: str | None, option: str, storage_options):
    """A --join or --from file as text columns (:func:`prdist.dataflow.labels.read_text_table`)."""
    from .dataflow.labels import read_text_table

    columns = None if names is None else tuple(c.strip() for c in names.split(","))
    if columns is not None and (not all(columns) or len(set(columns)) < len(columns)):
        raise InputError(f"{option} must name distinct columns separated by commas, e.g. 'id,text'. Got {names!r}.")
    return read_text_table(url, columns=columns, storage_options=storage_options, option=option)


def _cmd_labels_fill(args) -> int:
    from .dataflow.labels import fill_task

    options = _storage_options(args)
    if args.source_columns is not None and args.source is None:
        raise InputError("--from-columns names the columns of a --from file: give --from FILE too, or leave it out.")
    if args.source is None and args.rest is None:
        raise InputError("Nothing to fill with: give --from FILE (verdicts you have), --rest VERDICT (e.g. 'cannot judge'), or both.")
    source = None if args.source is None else (_text_table(args.source, args.source_columns, "--from-columns", options), args.source)
    done = fill_task(args.task, args.out, source=source, label=args.label, rest=args.rest, storage_options=options)
    said = ([f"{done.from_file:,} label(s) from {args.source}"] if source else []) + \
        ([f"{done.rest:,} set to {args.rest!r}"] if args.rest is not None else [])
    print(_shown(f"prdist labels: {done.items:,} item(s): {', '.join(said)}"))
    print(_shown(args.out))
    return EXIT_OK


def _require_store(url: str | None, option: str, storage_options, *, first: str | None = None) -> None:
    """Refuse a label store that does not exist (a typo would read as "no labels yet"); an
    existing store may be empty."""
    from .dataflow.labels import store_exists

    if url is not None and not store_exists(url, storage_options=storage_options):
        raise InputError(f"No label store at {url!r} ({option}): check the path, or import labels first with "
                         f"'prdist labels import --store {url} FILE'" + (f" ({first})." if first else "."))


def _cmd_labels_status(args) -> int:
    from .dataflow.labels import store_status

    options = _storage_options(args)
    _require_store(args.store, "--store", options)
    status = store_status(args.store, resource=args.resource, rule=args.aggregate, storage_options=options,
                          key=args.key, score=args.score)
    print(json.dumps(status, indent=2) if args.json else status_text(status))
    return EXIT_OK


#: How many annotators and disputed keys the text of ``labels status`` lists (``--json`` lists all).
STATUS_SHOWN = 20


def status_text(status: dict, shown: int = STATUS_SHOWN) -> str:
    """The label store's status for the terminal: counts, then a table of the annotators with the
    most records and the disputed keys one per line, each list cut at ``shown`` with "and K more"
    (names and keys sanitised for the terminal: a key may hold ", " or a line break)."""
    from .redaction import terminal_text

    kinds = status["verdicts"]
    fitted = status.get("fitted_on")
    scope = f" (fitted on the whole store: {fitted['records']:,} records, {fitted['annotators']:,} annotators)" if fitted else ""
    lines = [
        f"prdist labels: {status['items']:,} items, {status['records']:,} verdict records, rule {status['rule']}{scope}",
        "verdicts: " + ", ".join(f"{kind.replace('_', ' ')} {count:,}" for kind, count in kinds.items()),
        f"keys whose records disagree (annotators, or one annotator's corrections): {status['disagreeing_keys']:,}",
    ]
    alpha = status["agreement"]["krippendorff_alpha"]
    lines.append(f"agreement: Krippendorff's alpha {'undefined' if alpha is None else f'{alpha:.3f}'} over "
                 f"{status['agreement']['pairable_keys']:,} items judged correct/incorrect by 2+ annotators "
                 "(cannot judge: missing)")
    lines += _role_lines(status)  # judge30
    counts = status["annotator_verdicts"]
    busiest = sorted(counts, key=lambda a: (-status["annotators"][a], a))
    names = [terminal_text(a) or "(anonymous)" for a in busiest[:shown]]
    width = max([len("annotator"), *map(len, names)])
    lines.append(f"annotators: {len(counts):,}" + (f", the {len(names)} with the most records:" if len(counts) > len(names) else ""))
    if names:
        lines.append(f"  {'annotator':<{width}}  {'records':>9}  {'correct':>9}  {'incorrect':>9}  {'cannot judge':>12}")
    for name, who in zip(names, busiest):
        c = counts[who]
        lines.append(f"  {name:<{width}}  {status['annotators'][who]:>9,}  {c['correct']:>9,}  {c['incorrect']:>9,}  {c['cannot_judge']:>12,}")
    lines += _more(len(counts) - len(names), "annotators")
    disputed = status["disputed_keys"]
    lines.append(f"disputed keys: {len(disputed):,}" + (":" if disputed else ""))
    lines += [f"  {terminal_text(key)}" for key in disputed[:shown]]
    lines += _more(len(disputed) - shown, "disputed keys")
    return "\n".join(lines)


def _more(count: int, what: str) -> list[str]:
    return [f"  and {count:,} more {what} (--json lists them all)"] if count > 0 else []


def _role_lines(status: dict) -> list[str]:
    """The label status's records per role and the judges' quality against gold."""
    roles = status["roles"]
    lines = ["roles: " + ", ".join(f"{role} {c['records']:,} records on {c['items']:,} items" for role, c in roles.items())]
    quality = status["judge_quality"]
    if quality is None:
        lines.append("judge quality: no item has both a judge and a gold verdict")
    else:
        from .dataflow.summary import quality_text

        lines.append("judge quality against gold: " + quality_text(quality))
    return lines


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
    from .dataflow.ingest import IngestSpec, ingest

    options = _storage_options(args)
    columns = None if args.columns is None else tuple(c.strip() for c in args.columns.split(","))
    spec = IngestSpec(score=args.score, keys=tuple(args.keys), format=args.format, columns=columns, duplicates=args.duplicates)
    if args.scheduler is None:  # small inputs are sorted in memory; large ones on Dask's local scheduler
        result = ingest(args.sources, args.out, spec, storage_options=options)
    else:
        from .dataflow.cluster import dask_client

        with dask_client(args.scheduler) as client:
            result = ingest(args.sources, args.out, spec, storage_options=options, client=client)
    kept = (f"{result.duplicates:,} duplicate row(s) dropped (--duplicates keep-highest: the highest score of each key kept)"
            if args.duplicates == "keep-highest" else "every key unique")
    print(f"prdist ingest: {result.rows:,} items from {result.sources} file(s); {kept}", file=sys.stderr)
    print(_shown(result.url))
    return EXIT_OK


def _add_release(sub) -> None:
    parser = sub.add_parser(
        "release",
        help="announce a release to a Prefect server (starts evaluate-release/on-release)",
        description=(
            "Emit the event prdist.release.published for a released resource to a running Prefect "
            "server. The trigger of the on-release deployment (deploy/prefect.yaml) then starts "
            "evaluate-release with the resource URL (and --labels/--out when given; otherwise the "
            "deployment's). The event carries URLs only: a URL that embeds credentials is refused, "
            "and the worker reads storage credentials from its own environment. Prints the event id "
            "on the last line."
        ),
    )
    add = parser.add_argument
    add("--resource", required=True, metavar="URL", help="the released Parquet dataset (absolute path or fsspec URL such as s3://...)")
    add("--labels", default=None, metavar="URL", help="label store for the triggered run (default: the deployment's)")
    add("--out", default=None, metavar="URL", help="root of the run directories for the triggered run (default: the deployment's)")
    add("--api-url", dest="api_url", default=None, metavar="URL", help="Prefect API, e.g. http://127.0.0.1:4200/api (default: PREFECT_API_URL)")
    add("--dry-run", dest="dry_run", action="store_true", help="print the event as JSON (the body of POST <api>/events, in a list) instead of sending it")
    add("--current", default=None, metavar="POINTER", help="also publish the release as its series' current one: write the "
        "pointer file POINTER (e.g. s3://prdist/releases/current.json), which deployments name as their resource")
    parser.set_defaults(handler=_cmd_release)


def _cmd_release(args) -> int:
    from flows.release import emit_release, release_event

    event = release_event(args.resource, labels=args.labels, out=args.out)
    if args.dry_run:
        _print_json(event.to_dict())
        return EXIT_OK
    if args.current is not None:
        from flows.release import _api_url, write_current

        _api_url(args.api_url)  # no API to announce to: refused before the pointer is written
        write_current(args.current, event.resource)
        print(_shown(f"prdist release: {args.current} now names {event.resource} as the current release"))
    api = emit_release(event, api_url=args.api_url)
    print(_shown(f"prdist release: {event.name} for {event.resource} sent to {api}"))
    print(event.id)
    return EXIT_OK


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
    add("--ranks", default=None, metavar="R,R,...", help="ranks to follow (default: the latest run's guaranteed cut-offs and the powers of ten)")
    add("--out", default=None, metavar="DIR",
        help="output directory (default: <runs>/_history; with --series, <runs>/_history/<series>-<hash>, "
             "so the two never overwrite each other)")
    _add_storage_options(add)
    parser.set_defaults(handler=_cmd_history)


def _cmd_history(args) -> int:
    import warnings

    from .dataflow.history import DamagedRunWarning, write_history
    from .redaction import terminal_text

    ranks = None
    if args.ranks is not None:
        parts = args.ranks.split(",")
        if not all(p.strip().isdigit() and 1 <= int(p) <= LARGEST_COUNT for p in parts):
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
    changed = table[table["change"] != ""]
    print(f"prdist history: {table['run_id'].nunique()} run(s) in {table['series'].nunique()} series, "
          f"{len(changed)} certain change(s) ({(changed['change'] == 'down').sum()} down)")
    for row in changed.itertuples():
        print(f"  {terminal_text(row.series)}: run {terminal_text(row.run_id)} at rank {row.rank:,}: {row.change} "
              f"(now [{row.precision_lower:.3f}, {row.precision_upper:.3f}])")
    from flows._runner import may_have_api

    if may_have_api():  # prdist.precision.changed for each series' newest release, with a Prefect API
        from flows.events import announce_changes
        from .dataflow.history import newest_changes

        for series, rows in newest_changes(table).items():
            announce_changes(series, rows, runs=args.runs, storage_options=options)
    print(_shown(out))
    return EXIT_OK


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
    _add_budget(sub)
    _add_synth(sub)
    _add_run(sub)
    _add_labels(sub)
    _add_compare(sub)
    _add_release(sub)
    _add_history(sub)
    _add_ingest(sub)
    _count_options_fit(parser)
    return parser


#: The largest whole number an option may take: prdist counts ranks, items and draws in int64.
LARGEST_COUNT = 2**63 - 1


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


#: Every option that names a storage location or server (argparse dest -> how the user writes
#: it). Each is checked for embedded credentials before anything runs, so that no secret reaches
#: Prefect's flow-run parameters or a log; tests/integration/test_bad_input.py keeps this table complete.
URL_OPTIONS = {
    "resource": "--resource", "out": "--out", "labels": "--labels", "store": "--store",
    "files": "the label file", "run": "--run", "runs": "--runs", "exhaustive": "--exhaustive",
    "systems": "--system", "api_url": "--api-url", "sources": "the input file", "annotator_map": "--annotator-map",
    "join": "--join", "task": "the task", "source": "--from",
}  # fmt: skip


def _url_options(args):
    """(option, URL) of every URL option given on the command line."""
    for dest, option in URL_OPTIONS.items():
        values = getattr(args, dest, None)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str):
                yield option, value.partition("=")[2] if dest == "systems" else value


def _refuse_credentials_in_urls(args) -> None:
    from .redaction import refuse_credentials

    for option, url in _url_options(args):
        refuse_credentials(url, what=option)


def _check_stores_answer(args) -> None:
    """Ask every remote store named on the command line once, within a bounded time.

    A store that cannot be reached when the command starts is a wrong endpoint or a server that
    is down: refused at once (exit 2), where a flow would retry it for minutes. A store that goes
    away during a run is retried by the flows.
    """
    if args.command == "release":  # nothing is read or written: the event carries URLs only
        return
    from .dataflow.storage import check_reachable

    options = _json_object_option(getattr(args, "storage_options", None), option="--storage-options")
    for url in dict.fromkeys(url for option, url in _url_options(args) if option != "--api-url" and "://" in url):
        check_reachable(url, storage_options=options)


#: Every option that writes, by command: (argparse dest, how the user writes it). Each is checked
#: by :func:`prdist.dataflow.storage.check_output_place` before anything runs, so no output lands
#: on an input, a label store, a resource or a committed run; tests/integration/test_reliability_iii.py keeps
#: this table complete.
OUTPUT_OPTIONS = {
    "run": ("out", "--out"), "synth": ("out", "--out"), "compare": ("out", "--out"), "ingest": ("out", "--out"),
    "history": ("out", "--out"), "labels export": ("out", "--out"), "labels import": ("store", "--store"),
    "release": ("current", "--current"),
    "labels fill": ("out", "--out"),
}  # fmt: skip


def _check_outputs(args) -> None:
    """Refuse, before anything runs, an output of this command that would land on what it reads, on
    a resource, a label store or a committed run directory (one guard for every writer)."""
    command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
    if command not in OUTPUT_OPTIONS:
        return
    from .dataflow.storage import check_output_place

    dest, option = OUTPUT_OPTIONS[command]
    if command == "history" and args.out is None:
        from .dataflow.history import default_out

        args.out = default_out(args.runs, args.series)  # named here, so the check and the writer agree
    target = getattr(args, dest)
    if target is None:  # release without --current writes nothing
        return
    inputs = [(name, url) for name, url in _url_options(args) if name not in (option, "--runs", "--api-url") and url.strip()]
    options = _storage_options(args) if hasattr(args, "storage_options") else None  # release has none
    check_output_place(target, option=option, storage_options=options, inputs=inputs,
                       store=dest == "store")


def _shown(text: str) -> str:
    """Text naming paths (a file name may hold control characters) as the terminal shows it
    literally, line by line."""
    from .redaction import terminal_text

    return "\n".join(map(terminal_text, str(text).split("\n")))


def _one_line(exc: BaseException) -> str:
    """An error's message as one line a terminal shows literally (it may quote a file's contents)."""
    from .redaction import terminal_text

    # Messages quote other libraries' errors, some of which span lines; the contract is one line.
    return terminal_text(" ".join(str(exc).split()))


@contextlib.contextmanager
def _warnings_as_lines():
    """Show each distinct warning once, as one line ``prdist: warning: ...`` (no file, line or source)."""
    import warnings

    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = f"prdist: warning: {_one_line(message)}"
        if text not in shown:
            shown.add(text)
            print(text, file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


class _ReaderMayGo:
    """Standard output (or error) while a command runs: a reader that goes away ends the output, not the command.

    Python ignores SIGPIPE, so a write to a pipe whose reader has gone (``prdist run ... | head
    -1``) raises BrokenPipeError. Here that write and every later one go to the null device (the
    descriptor is pointed there, so the flush at exit does not fail again) and the command runs
    to its end: its exit code (3 while labels are awaited) and its lines on the other stream
    survive the pipe, as ``set -o pipefail`` expects. A stream that is closed when the command
    starts (``prdist ... >&-``) is the null device from the start, so a file the command opens
    can never take its descriptor.
    """

    def __init__(self, stream):
        self._stream = stream
        self.gone = False

    @classmethod
    def around(cls, stream, fd: int):
        """``stream`` wrapped; a missing stream (descriptor ``fd`` closed) becomes the null device."""
        if stream is None:
            try:
                os.fstat(fd)
            except OSError:  # closed: hold the descriptor, so that no file opened later gets it
                null = os.open(os.devnull, os.O_WRONLY)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            stream = open(fd, "w", closefd=False)  # noqa: SIM115 (lives as long as the process)
        return stream if isinstance(stream, cls) else cls(stream)

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._discard()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._discard()

    def _discard(self) -> None:
        self.gone = True
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # an in-memory stream (tests): nothing to redirect
            return
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The ephemeral Prefect server phones home unless told not to; clusters are often offline.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # With --prefect and no API, Prefect starts a temporary server; its 20 s default is not enough
    # on a busy machine (8 commands at once on 2 cores). Read when Prefect is imported, so set now.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    # NumPy's OpenBLAS starts its threads on import, and they spin ~0.1 s of CPU waiting for work
    # (a run has none for them), taking a core from the command. Shortest spin before they sleep:
    # their number, hence every result, stays the same. Read when NumPy is imported, so set now.
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    debug = "--debug" in argv
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayGo.around(sys.stdout, 1), _ReaderMayGo.around(sys.stderr, 2)
    try:
        return _run_command(argv, debug)
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = streams


def _run_command(argv: list, debug: bool) -> int:
    """Parse ``argv``, run the sub-command, and map its outcome to an exit code."""
    try:
        args = build_parser().parse_args(argv)
        _refuse_credentials_in_urls(args)
        _check_stores_answer(args)
        _check_outputs(args)
        with _warnings_as_lines():
            return int(args.handler(args) or EXIT_OK)
    except AwaitingLabels as exc:
        print(f"prdist: {_one_line(exc)}", file=sys.stderr)
        return EXIT_AWAITING_LABELS
    except InputError as exc:
        if debug:
            traceback.print_exc()
        print(f"prdist: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("prdist: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # the last resort: one line, traceback on request
        if debug:
            traceback.print_exc()
        print(f"prdist: failed: {type(exc).__name__}: {_one_line(exc)} (rerun with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILURE


def console_main() -> None:
    """The ``prdist`` command: :func:`main`, then an exit that skips interpreter finalisation.

    pyarrow's C++ thread pools can abort the process while the interpreter finalises, after the
    command has done all its work and printed its result: "terminate called without an active
    exception", exit 134 (apache/arrow#34314 and #39862, open upstream). Here it ended 1 of 224
    runs made 8 at a time on 2 cores. So the command does what the interpreter does first when it
    exits, in the same order: it runs threading's exit hooks (Prefect drains its events worker
    there: task-run states and prdist's events) and waits for non-daemon threads, then the atexit
    handlers (logging's, which flushes Prefect's API log handler); it then flushes its output and
    leaves with ``os._exit``. The exit code is the command's, and the race with finalisation is
    never entered (nor its last garbage collection, about 0.1 s). Tests and notebooks call
    :func:`main`, which returns normally.
    """
    import atexit
    import threading

    code = main()
    threading._shutdown()  # Py_FinalizeEx's first step: threading's exit hooks, then non-daemon threads joined
    atexit._run_exitfuncs()  # its next one
    for stream in (sys.stdout, sys.stderr):
        try:
            stream and _ReaderMayGo(stream).flush()
        except ValueError:  # closed by an atexit handler
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()
