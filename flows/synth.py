"""Prefect flow: write a synthetic resource with known precision (a population score model).

The flow that deployments name (``flows.synth.synthesize_resource``). Its body, with its step,
is ``flows/_synth.py``, which imports no Prefect: the command line's in-process runner calls
that body, and only a flow run pays for Prefect.
"""

from __future__ import annotations

from prefect import flow

from flows import _synth
from flows._policies import FLOW_TIMEOUT, as_flow_body

# A timeout, no flow retries: a resource is written once (create-only), a rerun names another.
synthesize_resource = flow(name="synthesize-resource", log_prints=True, **FLOW_TIMEOUT)(as_flow_body(_synth.synthesize_resource))
