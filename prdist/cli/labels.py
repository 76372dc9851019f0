"""``prdist labels``: import verdicts, see a store's status, export or fill an annotation task."""

from __future__ import annotations

import json

from prdist.errors import InputError
from prdist.cli._common import (
    EXIT_OK,
    _Parser,
    _add_aggregate,
    _add_key_score,
    _add_storage_options,
    _require_store,
    _shown,
    _storage_options,
)


def _add_labels(sub) -> None:
    from prdist.verdicts.choices import LABEL_FORMATS as FORMATS, ROLES

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
    from prdist.dataflow.labels.formats import Layout
    from prdist.dataflow.labels.importer import import_labels, read_annotator_map
    from prdist.redaction import terminal_text
    from prdist.verdicts.aggregation import VerdictWords

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
    from prdist.dataflow.labels.task import newest_run, write_annotation_file

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
    """A --join or --from file as text columns (:func:`prdist.dataflow.labels.task.read_text_table`)."""
    from prdist.dataflow.labels.task import read_text_table

    columns = None if names is None else tuple(c.strip() for c in names.split(","))
    if columns is not None and (not all(columns) or len(set(columns)) < len(columns)):
        raise InputError(f"{option} must name distinct columns separated by commas, e.g. 'id,text'. Got {names!r}.")
    return read_text_table(url, columns=columns, storage_options=storage_options, option=option)


def _cmd_labels_fill(args) -> int:
    from prdist.dataflow.labels.task import fill_task

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


def _cmd_labels_status(args) -> int:
    from prdist.dataflow.labels.store import store_status

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
    from prdist.redaction import terminal_text

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
        from prdist.render.terminal import quality_text

        lines.append("judge quality against gold: " + quality_text(quality))
    return lines
