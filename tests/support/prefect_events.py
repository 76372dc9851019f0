"""Record the events prdist sends, with Prefect's own AssertingEventsClient (shared by tests)."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def recorded_events(monkeypatch):
    """Within the block a (never contacted) Prefect API is configured and every event sent is
    recorded; yields a function returning the events so far, oldest first."""
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = "http://127.0.0.1:9/api"
    monkeypatch.setenv("PREFECT_API_URL", api)  # what the commands look for before importing Prefect
    AssertingEventsClient.reset()
    EventsWorker.set_client_override(AssertingEventsClient)
    try:
        with temporary_settings(updates={PREFECT_API_URL: api}):
            yield lambda: [event for client in AssertingEventsClient.all for event in client.events]
    finally:
        EventsWorker.drain_all(timeout=10)
        EventsWorker.set_client_override(None)
        AssertingEventsClient.reset()
