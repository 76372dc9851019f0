"""``prdist release``: announce a release to a Prefect server."""

from __future__ import annotations

from prdist.cli._common import EXIT_OK, _print_json, _shown


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
