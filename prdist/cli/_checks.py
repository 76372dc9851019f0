"""The checks every command's options pass before anything runs: credentials, reachability, outputs."""

from __future__ import annotations

from prdist.cli._common import _json_object_option, _storage_options


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
    from prdist.redaction import refuse_credentials

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
    from prdist.dataflow.io.storage import check_reachable

    options = _json_object_option(getattr(args, "storage_options", None), option="--storage-options")
    for url in dict.fromkeys(url for option, url in _url_options(args) if option != "--api-url" and "://" in url):
        check_reachable(url, storage_options=options)


#: Every option that writes, by command: (argparse dest, how the user writes it). Each is checked
#: by :func:`prdist.dataflow.io.output_place.check_output_place` before anything runs, so no output lands
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
    from prdist.dataflow.io.output_place import check_output_place

    dest, option = OUTPUT_OPTIONS[command]
    if command == "history" and args.out is None:
        from prdist.dataflow.history import default_out

        args.out = default_out(args.runs, args.series)  # named here, so the check and the writer agree
    target = getattr(args, dest)
    if target is None:  # release without --current writes nothing
        return
    inputs = [(name, url) for name, url in _url_options(args) if name not in (option, "--runs", "--api-url") and url.strip()]
    options = _storage_options(args) if hasattr(args, "storage_options") else None  # release has none
    check_output_place(target, option=option, storage_options=options, inputs=inputs,
                       store=dest == "store")
