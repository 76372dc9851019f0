"""Task policies shared by the flows."""

from __future__ import annotations

from prefect.cache_policies import NO_CACHE

from prdist.dataflow.storage import StorageUnavailable
from prdist.errors import PrdistError


def transient(task, task_run, state) -> bool:
    """Retry I/O failures, never bad input: a wrong URL or schema does not fix itself.

    An unreachable storage endpoint is retried too: it may be a typo, or an outage that passes.
    """
    try:
        state.result()
    except StorageUnavailable:
        return True
    except PrdistError:
        return False
    except Exception:
        return True
    return False


# Results stay in memory: task results hold opened resources (whose filesystems carry
# credentials) and data read from input, which must never be pickled to Prefect's result store.
# Resuming is the job of prdist's own staged Parquet files and committed run directories.
IN_MEMORY = dict(cache_policy=NO_CACHE, persist_result=False)

IO_RETRIES = dict(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=transient, **IN_MEMORY)
