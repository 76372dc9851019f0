import io

from prdist.dataflow.engine.progress import report_progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_reported_at_a_terminal_only(dask_client, monkeypatch):
    futures = dask_client.map(lambda x: x * 2, range(10), pure=False)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    report_progress(futures, "histogram")
    assert "histogram: 10/10 partitions" in terminal.getvalue() and terminal.getvalue().endswith("\n")

    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    report_progress(futures, "histogram")
    assert pipe.getvalue() == ""
    assert dask_client.gather(futures) == [2 * x for x in range(10)]


def test_in_process_passes_report_progress_at_a_terminal_too(monkeypatch):
    from prdist.dataflow.engine import executor

    def _double_task(item):
        return 2 * item

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert executor.run_tasks(None, _double_task, range(12)) == [2 * x for x in range(12)]
    assert "double: 12/12 partitions" in terminal.getvalue() and terminal.getvalue().endswith("\n")
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    executor.map_reduce(None, _double_task, lambda a, b: a + b, range(12))
    assert pipe.getvalue() == ""


def test_a_failed_in_process_pass_ends_its_progress_line(monkeypatch):
    """The error printed after a failed pass starts a line of its own, on one thread and on several."""
    import pytest

    from prdist.dataflow.engine import executor

    def _fragile_task(item):
        if item == 9:
            raise ValueError("bad partition")
        return item

    for threads in (1, 2):
        monkeypatch.setattr(executor, "THREADS", threads)
        terminal = Terminal()
        monkeypatch.setattr("sys.stderr", terminal)
        with pytest.raises(ValueError):
            executor.run_tasks(None, _fragile_task, range(12))
        assert "fragile: " in terminal.getvalue() and terminal.getvalue().endswith("\n"), threads
