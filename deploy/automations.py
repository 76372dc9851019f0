"""Create, or update by name, the automations of deploy/automations/*.yaml on the Prefect server.

Run by deploy/register.sh (the compose job, run on every ``docker compose up``), against
PREFECT_API_URL: ``prefect automation create`` alone would add another copy on every run, and a
zombie-killer registered twice acts twice. An automation of the same name is updated in place
(copies beyond the first are deleted). Exit 1 with the reason when a file is not a valid automation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from prefect.client.orchestration import get_client
from prefect.events.schemas.automations import AutomationCore

FILES = sorted((Path(__file__).resolve().parent / "automations").glob("*.yaml"))


def register(files: list[Path]) -> None:
    """Create or update, by name, the automation of each of ``files``."""
    with get_client(sync_client=True) as client:
        for path in files:
            automation = AutomationCore.model_validate(yaml.safe_load(path.read_text()))
            existing = client.read_automations_by_name(automation.name)
            if existing:
                client.update_automation(existing[0].id, automation)
                for copy in existing[1:]:
                    client.delete_automation(copy.id)
            else:
                client.create_automation(automation)
            print(f"{'updated' if existing else 'created'} automation {automation.name!r} ({path.name})")


def main() -> int:
    try:
        register(FILES)
    except ValueError as exc:  # pydantic's ValidationError: the file, not the server
        print(f"deploy/automations: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
