import io

from prdist.dataflow.progress import report_progress


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
    from prdist.dataflow import executor

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
