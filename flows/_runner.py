"""The two runners of a flow: on a Prefect API when one is configured, in-process otherwise.

Both run the same flow body, whose steps are :class:`flows._policies.Step`: on the Prefect runner
the body is a flow run and every step a task run, visible in the server's UI; in-process the body
(``flows/_<name>.py``) is called as a plain function and the steps call their functions (with the
same retries), so no server has to start, nothing is recorded and Prefect is not even imported.
The run directories are the same.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from prdist.errors import InputError

__all__ = ["FlowOutcome", "configured_api", "may_have_api", "run_flow"]

#: What the command line tells a user whose runs are not recorded (one line on stderr).
IN_PROCESS_NOTE = (
    "running in-process (no Prefect API configured); to record runs in Prefect, set PREFECT_API_URL "
    "(e.g. 'prefect server start', then PREFECT_API_URL=http://127.0.0.1:4200/api) or pass --prefect"
)


@dataclass(frozen=True)
class FlowOutcome:
    """What a flow returned: its URL, and the message when it ended awaiting labels."""

    url: str
    awaiting: str | None = None


def configured_api() -> str | None:
    """The Prefect API URL of the active settings (``PREFECT_API_URL``, a profile, ``.env``), or None."""
    from prefect.settings import get_current_settings

    return get_current_settings().api.url or None


#: What a settings file Prefect reads must hold to configure an API URL: the variable's name
#: (profiles, ``.env``), or an ``[api]`` table or key (``prefect.toml``, ``[tool.prefect.api]`` in
#: ``pyproject.toml``).
_API_SETTING = re.compile(r"PREFECT_API_URL|^\s*\[\s*(tool\s*\.\s*prefect\s*\.\s*)?api\s*\]|^\s*api\s*[.=]", re.I | re.M)


def may_have_api() -> bool:
    """Whether a Prefect API may be configured, judged without importing Prefect.

    True when ``PREFECT_API_URL`` is set, a file Prefect reads its settings from (a profiles
    file, ``prefect.toml``, ``.env``, ``pyproject.toml``) mentions an API URL setting, or Prefect
    is imported already (its settings may have been changed in this process); then
    :func:`configured_api` decides. Importing Prefect to read its settings costs most of a small
    run's start-up, so commands import it only where it may matter.
    """
    if os.environ.get("PREFECT_API_URL") or "prefect" in sys.modules:
        return True
    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    files = [os.environ.get("PREFECT_PROFILES_PATH"), home / "profiles.toml", "prefect.toml", ".env", "pyproject.toml"]
    return any(path and Path(path).is_file() and _API_SETTING.search(_text(Path(path))) for path in files)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return "PREFECT_API_URL"  # unreadable: let Prefect decide


def run_flow(module: str, name: str, parameters: dict, *, on_prefect: bool) -> FlowOutcome:
    """Run the flow ``name`` of ``flows.<module>`` on ``parameters``: as a Prefect flow run
    (``on_prefect``: the flow ``flows.<module>.<name>``, a deployment's entrypoint) or
    in-process (its body, the plain function ``flows._<module>.<name>``, without importing Prefect).

    On Prefect without a configured API, Prefect starts its temporary server for this process
    (``--prefect``). A configured API that does not answer is an :class:`InputError` naming
    ``PREFECT_API_URL``; a temporary server that does not come up in time is a RuntimeError
    naming ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``. Neither starts the flow.
    """
    if not on_prefect:
        body = getattr(importlib.import_module(f"flows._{module}"), name)
        return _outcome(body(**parameters))
    flow = getattr(importlib.import_module(f"flows.{module}"), name)
    _check_api()
    state = flow(**parameters, return_state=True)
    return _outcome(state if state.name == "AwaitingLabels" else state.result())  # result() re-raises, typed


def _outcome(result) -> FlowOutcome:
    # In-process a body ends on a FlowOutcome (flows._policies.conclude); a flow run on its URL,
    # or on a Completed state named "AwaitingLabels" holding the URL.
    if isinstance(result, FlowOutcome):
        return result
    if isinstance(result, str):
        return FlowOutcome(result)
    return FlowOutcome(result.result(), result.message if result.name == "AwaitingLabels" else None)


def _check_api() -> None:
    from prefect.client.orchestration import get_client

    api = configured_api()
    try:
        with get_client(sync_client=True) as client:  # without an API: starts the temporary server
            failure = client.api_healthcheck()
    except RuntimeError as exc:
        if "ephemeral" not in str(exc):
            raise
        raise RuntimeError(
            "Prefect's temporary server did not start in time (the machine may be busy). Set "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher, point PREFECT_API_URL at a running "
            "server, or drop --prefect to run in-process."
        ) from None
    if failure is not None:
        raise InputError(
            f"The Prefect API at {api} does not answer ({type(failure).__name__}). Start the server "
            "('prefect server start'), or fix or unset PREFECT_API_URL (then the command runs in-process)."
        )
