"""Task policies shared by the flows."""

from __future__ import annotations

from prdist.errors import PrdistError


def transient(task, task_run, state) -> bool:
    """Retry I/O failures, never bad input: a wrong URL or schema does not fix itself."""
    try:
        state.result()
    except PrdistError:
        return False
    except Exception:
        return True
    return False


IO_RETRIES = dict(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=transient)
