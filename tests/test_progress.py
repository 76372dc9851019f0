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
