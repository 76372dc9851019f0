"""Task policies shared by the flows."""

from __future__ import annotations

import json

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed
from pydantic import SecretStr

from prdist.dataflow.storage import StorageUnavailable, is_permanent
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
    except OSError as exc:
        return not is_permanent(exc)  # a permission or a read-only disk does not fix itself
    except Exception:
        return True
    return False


# Results stay in memory: task results hold opened resources (whose filesystems carry
# credentials) and data read from input, which must never be pickled to Prefect's result store.
# Resuming is the job of prdist's own staged Parquet files and committed run directories.
IN_MEMORY = dict(cache_policy=NO_CACHE, persist_result=False)

IO_RETRIES = dict(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=transient, **IN_MEMORY)


def sealed(storage_options: dict | None) -> SecretStr | None:
    """Storage options as a flow parameter that Prefect records and shows as '**********'.

    Prefect stores every flow run's parameters on its server, and storage options may hold
    credentials: the command line hands them to a flow sealed, the flow unseals them.
    """
    return None if storage_options is None else SecretStr(json.dumps(storage_options))


def unsealed(storage_options: dict | SecretStr | None) -> dict | None:
    """The storage options a flow was given: sealed by :func:`sealed`, or a plain dict (deployments)."""
    if isinstance(storage_options, SecretStr):
        return json.loads(storage_options.get_secret_value())
    return storage_options


def conclude(outcome, *, summary: str, artifact_key: str, waiting_for: str):
    """End a flow on its run directory: a markdown artifact, then the URL or "AwaitingLabels".

    ``outcome`` is a prdist RunOutcome; a run with missing labels ends in a Completed state named
    "AwaitingLabels" whose result is still the run directory.
    """
    logger = get_run_logger()
    create_markdown_artifact(markdown=summary, key=artifact_key, description=f"{artifact_key} summary")
    logger.info("run directory: %s", outcome.url)
    if outcome.missing:
        message = f"{outcome.missing} {waiting_for} await labels; annotation task at {outcome.task}"
        logger.warning(message)
        return Completed(name="AwaitingLabels", message=message, data=outcome.url)
    return outcome.url
