"""``prdist synth``: write a synthetic resource with known precision."""

from __future__ import annotations

from prdist import params as P
from prdist.errors import InputError
from prdist.cli._common import EXIT_OK, _add_storage_options, _shown, _storage_options


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
    P.PREVALENCE.add_to(add)
    add("--n", type=int, required=True, metavar="N", help="number of items")
    P.PARTITIONS.add_to(add)
    add("--order", choices=("sorted", "shuffled"), default="sorted", help="row order (default sorted: rank order)")
    P.SEED.add_to(add, required=True, default=None, help="master seed (same seed, same resource)")
    P.KEY_OFFSET.add_to(add)
    P.JUDGE_ACCURACY.add_to(
        add, help="add a column 'judge': each item's label, flipped with probability 1-A independently (seeded by "
                  "--seed), in {range}; for 'prdist run --judge-column judge' (default: no judge column)")
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


def _cmd_synth(args) -> int:
    import contextlib

    from prdist import population
    from prdist._validation import check_int
    from prdist.dataflow.engine.cluster import dask_client
    from prdist.dataflow.synth import write_synthetic

    owner = "prdist synth"
    n = check_int(args.n, name="--n", owner=owner, low=1)
    P.PARTITIONS.check(args.partitions, owner=owner, name=P.PARTITIONS.flag, bound=n)
    P.SEED.check(args.seed, owner=owner, name=P.SEED.flag)
    P.KEY_OFFSET.check(args.key_offset, owner=owner, name=P.KEY_OFFSET.flag, bound=n)
    P.JUDGE_ACCURACY.check(args.judge_accuracy, owner=owner, name=P.JUDGE_ACCURACY.flag)
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
