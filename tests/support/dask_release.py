"""Waiting for a Dask client to drop its futures (a release reaches the scheduler by its loop)."""

from __future__ import annotations

import time


def released(client, timeout=10.0) -> bool:
    """Whether ``client`` holds no future within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while client.futures and time.monotonic() < deadline:
        time.sleep(0.01)
    return not client.futures
