"""The two runners of a flow: on a Prefect API when one is configured, in-process otherwise.

Both run the same flow body, whose steps are :class:`flows._policies.Step`: on the Prefect runner
the body is a flow run and every step a task run, visible in the server's UI; in-process the body
is called as the plain function ``flow.fn`` and the steps call their functions (with the same
retries), so no server has to start and nothing is recorded. The run directories are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from prdist.errors import InputError

__all__ = ["FlowOutcome", "configured_api", "run_flow"]

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


def run_flow(flow, parameters: dict, *, on_prefect: bool) -> FlowOutcome:
    """Run ``flow(**parameters)`` as a Prefect flow run (``on_prefect``) or in-process.

    On Prefect without a configured API, Prefect starts its temporary server for this process
    (``--prefect``). A configured API that does not answer is an :class:`InputError` naming
    ``PREFECT_API_URL``; a temporary server that does not come up in time is a RuntimeError
    naming ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``. Neither starts the flow.
    """
    if not on_prefect:
        return _outcome(flow.fn(**parameters))
    _check_api()
    state = flow(**parameters, return_state=True)
    return _outcome(state if state.name == "AwaitingLabels" else state.result())  # result() re-raises, typed


def _outcome(result) -> FlowOutcome:
    from prefect.states import State

    # A flow ends on its URL, or on a Completed state named "AwaitingLabels" holding the URL.
    if isinstance(result, State):
        return FlowOutcome(result.result(), result.message if result.name == "AwaitingLabels" else None)
    return FlowOutcome(result)


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
