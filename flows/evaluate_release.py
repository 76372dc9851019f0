"""Prefect flow: evaluate one release of a ranked resource.

The flow that deployments name (``flows.evaluate_release.evaluate_release``), schedule and
trigger. Its body, with its steps, is ``flows/_evaluate_release.py``, which imports no Prefect:
the command line's in-process runner calls that body, and only a flow run pays for Prefect.
"""

from __future__ import annotations

import posixpath

from prefect import flow

from flows import _evaluate_release
from flows._policies import FLOW_RETRIES, FLOW_TIMEOUT, final_on_bad_input
from flows.release import current_release
from prdist.dataflow.history import default_series
from prdist.redaction import redact_url, terminal_text


def run_name() -> str:
    """The flow run's name: its series and release (the resource's last path part), no credentials.

    A release pointer (``prdist release --current``) is named by the release it names now; by
    itself when it cannot be read (the run then says why).
    """
    from prefect.runtime import flow_run

    resource = flow_run.parameters["resource"]
    try:
        resource = current_release(resource)
    except Exception:  # noqa: BLE001 (a name must not fail the run; the run's first step reports the pointer)
        pass
    resource = redact_url(resource).rstrip("/")
    series = flow_run.parameters.get("series") or default_series(resource)
    # Prefect's console log prints the name: shown literally, whatever the series holds.
    return terminal_text(f"{series} @ {posixpath.basename(resource) or resource}")


evaluate_release = flow(name="evaluate-release", log_prints=True, flow_run_name=run_name, **FLOW_RETRIES, **FLOW_TIMEOUT)(
    final_on_bad_input(_evaluate_release.evaluate_release))
