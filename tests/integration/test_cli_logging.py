import logging

from prdist.cli._prefect import _OneLineForPrdistErrors
from prdist.errors import DataError


def record(name, msg, exc=None):
    exc_info = (type(exc), exc, None) if exc else None
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, (), exc_info)


def test_console_filter_keeps_prdist_errors_to_one_line_and_drops_s3fs_cleanup_noise():
    f = _OneLineForPrdistErrors()
    ours = record("prefect.flow_runs", "Flow run failed", DataError("bad score"))
    assert not f.filter(ours)  # main() says it once; the record stays on the Prefect server
    state = record("prefect.task_runs", "Finished in state Failed('Task run encountered an exception DataError: bad score')")
    assert not f.filter(state)
    assert f.filter(record("prefect.task_runs", "Finished in state Failed('Task run encountered an exception KeyError: x')"))
    other = record("prefect.flow_runs", "Flow run failed", RuntimeError("bug"))
    assert f.filter(other) and other.exc_info is not None  # real failures keep their traceback
    noise = record("asyncio", "Task exception was never retrieved\nfuture: <Task finished coro=<ClientCreatorContext.__aexit__() done>")
    assert not f.filter(noise)
    assert f.filter(record("asyncio", "something else went wrong"))
