"""Running a command's flow: on the configured Prefect API (or with --prefect), else in-process."""

from __future__ import annotations

import functools
import importlib
import logging
import re
import sys

from prdist.errors import PrdistError
from prdist.cli._common import _one_line


@functools.cache
def _names_a_prdist_error() -> re.Pattern:
    """Prefect's state messages name the exception ("... encountered an exception DataError: ...");
    this matches every prdist error class loaded by then (the filter runs once flows are imported)."""
    found, todo = set(), [PrdistError]
    while todo:
        cls = todo.pop()
        found.add(cls.__name__)
        todo += cls.__subclasses__()
    return re.compile(r"exception:? (%s)\b" % "|".join(sorted(found)))


class _OneLineForPrdistErrors(logging.Filter):
    """Keep Prefect's console records of a prdist error (task, flow, traceback) off the console.

    Such an error is the user's to fix and main() prints it as one line, once; the records stay
    in the flow run's logs on the Prefect server (the API handler sees them first), and
    ``--debug`` keeps them on the console too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        # A prdist error is printed once, by main(), in the command line's terms: the task's and
        # the flow's records of it (with or without a traceback) stay on the Prefect server.
        if record.exc_info and isinstance(record.exc_info[1], PrdistError):
            return False
        # A Prefect API that stopped answering: main() says so in one line (and a run that
        # committed before stands, _run_flow); the engine's traceback of it is noise on the console.
        if record.exc_info and type(record.exc_info[1]).__module__.split(".")[0] in ("httpx", "httpcore"):
            return False
        if record.name.startswith("prefect") and _names_a_prdist_error().search(record.getMessage()):
            return False
        # s3fs caches its clients; closing one that an earlier event loop created makes
        # aiobotocore log "Task exception was never retrieved" at garbage collection. It is
        # cleanup noise, never a failure of the run, so the console does not show it.
        if record.name == "asyncio" and "ClientCreatorContext.__aexit__" in record.getMessage():
            return False
        return True


def _quiet_prefect_console(args) -> None:
    """Install :class:`_OneLineForPrdistErrors` on Prefect's console handlers (after Prefect is imported)."""
    if args.debug:
        return
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(isinstance(f, _OneLineForPrdistErrors) for f in handler.filters):
            handler.addFilter(_OneLineForPrdistErrors())


def _run_flow(module: str, name: str, parameters: dict, storage_options, args, committed=None):
    """Run the flow ``flows.<module>.<name>``: on the configured Prefect API (or with --prefect),
    else its body in-process (:func:`flows._runner.run_flow`).

    ``committed`` (optional) returns the run the flow commits, or None. A flow run that fails for
    a reason other than prdist's own errors (a Prefect server that stopped answering) after its
    run committed is the committed run, with one warning line: the run stands, its record on the
    server may be incomplete.
    """
    from flows._runner import run_flow

    if _on_prefect(args):
        from flows._policies import sealed  # Prefect records flow parameters: credentials go sealed

        importlib.import_module(f"flows.{module}")  # imports Prefect, which sets up its console logging
        _quiet_prefect_console(args)  # before a failing task logs its traceback there
        try:
            return run_flow(module, name, {**parameters, "storage_options": sealed(storage_options)}, on_prefect=True)
        except Exception as exc:
            found = None if committed is None or isinstance(exc, PrdistError) else committed()
            if found is None:
                raise
            print(f"prdist: warning: the Prefect flow run failed after its run committed ({type(exc).__name__}: "
                  f"{_one_line(exc)}); the run stands, its record on the Prefect server may be incomplete", file=sys.stderr)
            return found
    return run_flow(module, name, {**parameters, "storage_options": storage_options}, on_prefect=False)


def _on_prefect(args) -> bool:
    """Whether this command's flows run on Prefect: --prefect or a configured API (decided once)."""
    if getattr(args, "on_prefect", None) is None:
        from flows._runner import configured_api, may_have_api

        args.on_prefect = bool(args.prefect or (may_have_api() and configured_api()))
        if "prefect" in sys.modules:
            _quiet_prefect_console(args)  # Prefect, once imported, logs to the console on either runner
    return args.on_prefect


def _say_where_it_ran(args) -> None:
    """After a flow ran in-process, one stderr line says so (after: an error stays the only line)."""
    if getattr(args, "on_prefect", None) is False:
        from flows._runner import IN_PROCESS_NOTE

        print(f"prdist: {IN_PROCESS_NOTE}", file=sys.stderr)
