"""Create, or update by name, the automations of deploy/automations/*.yaml on the Prefect API (PREFECT_API_URL).

    python deploy/automations.py [FILE...]        (default: every deploy/automations/*.yaml)

The step `sh deploy/register.sh automations` runs (the compose job runs it on every ``docker
compose up``). ``prefect automation create`` alone would add another copy on every run, and a
zombie-killer registered twice acts twice: an automation of the same name is updated in place (copies
beyond the first are deleted), so running this again leaves one of each. A notification action's
``block_document_id: PRDIST_NOTIFY_BLOCK`` becomes the id of the notification block that the
environment variable PRDIST_NOTIFY_BLOCK names as ``<block type slug>/<block name>`` (as
``prefect block ls`` lists it, e.g. ``slack-webhook/prdist-alerts``); without the variable those
automations are skipped, with a line saying so. Exit 2 with one line when the block does not exist,
exit 1 with the reason when a file is not a valid automation.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

PLACEHOLDER = "PRDIST_NOTIFY_BLOCK"
HERE = Path(__file__).resolve().parent / "automations"


def automation(document: dict, block_id: str | None):
    """The automation a file's ``document`` describes, its notification block filled in; None when it
    needs a block and none is configured."""
    from prefect.events.schemas.automations import AutomationCore

    actions = document.get("actions", [])
    needs_block = [a for a in actions if a.get("block_document_id") == PLACEHOLDER]
    if needs_block and block_id is None:
        return None
    for action in needs_block:
        action["block_document_id"] = block_id
    return AutomationCore.model_validate(document)


def block_id(client, slug: str | None) -> str | None:
    """The id of the block ``<type slug>/<name>``, or None for no ``slug``."""
    from prefect.exceptions import ObjectNotFound

    if not slug:
        return None
    kind, _, name = slug.partition("/")
    try:
        return str(client.read_block_document_by_name(name, block_type_slug=kind).id)
    except (ObjectNotFound, ValueError):
        print(f"{PLACEHOLDER}={slug!r} names no notification block. Create it first (e.g. in the UI, Blocks), "
              "then name it as <block type slug>/<block name>, as 'prefect block ls' lists it.", file=sys.stderr)
        raise SystemExit(2) from None


def register(client, path: Path, notify: str | None) -> None:
    """Create or update, by name, the automation of the file ``path``."""
    made = automation(yaml.safe_load(path.read_text()), notify)
    if made is None:
        print(f"skipped {path.name}: it notifies; set {PLACEHOLDER}=<block type slug>/<block name> to create it")
        return
    existing = client.read_automations_by_name(made.name)
    if existing:
        client.update_automation(existing[0].id, made)
        for copy in existing[1:]:
            client.delete_automation(copy.id)
    else:
        client.create_automation(made)
    print(f"{'updated' if existing else 'created'} automation {made.name!r} ({path.name})")


def main(argv: list[str]) -> int:
    from prefect.client.orchestration import get_client

    files = [Path(f) for f in argv] or sorted(HERE.glob("*.yaml"))
    with get_client(sync_client=True) as client:
        notify = block_id(client, os.environ.get(PLACEHOLDER))
        for path in files:
            try:
                register(client, path, notify)
            except ValueError as exc:  # pydantic's ValidationError: the file, not the server
                print(f"deploy/automations: {path.name}: {exc}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
