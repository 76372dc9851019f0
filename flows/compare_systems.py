"""Prefect flow: compare several systems (or releases) that share one label store.

The flow that deployments name (``flows.compare_systems.compare_systems``). Its body, with its
steps, is ``flows/_compare_systems.py``, which imports no Prefect: the command line's in-process
runner calls that body, and only a flow run pays for Prefect.
"""

from __future__ import annotations

from prefect import flow

from flows import _compare_systems
from flows._policies import FLOW_RETRIES, FLOW_TIMEOUT, final_on_bad_input

compare_systems = flow(name="compare-systems", log_prints=True, **FLOW_RETRIES, **FLOW_TIMEOUT)(
    final_on_bad_input(_compare_systems.compare_systems))
