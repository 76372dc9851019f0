"""In-process passes on threads: the same results in the same order as one thread, and errors as one thread raises them."""

from __future__ import annotations

import threading
import time

import pytest

from prdist.dataflow.engine import executor
from prdist.dataflow.engine.cluster import LOCAL_CLUSTER_FROM_ITEMS, dask_client


def slow_square(item, scale=1, *, offset=0):
    time.sleep(0.002 * (item % 3))  # finishing out of order
    return (item * item) * scale + offset, threading.get_ident()


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_results_come_in_item_order_whatever_the_threads(monkeypatch, threads):
    monkeypatch.setattr(executor, "THREADS", threads)
    results = executor.run_tasks(None, slow_square, range(20), 3, broadcast={"offset": 1})
    assert [r for r, _ in results] == [i * i * 3 + 1 for i in range(20)]
    ran_on = {t for _, t in results}
    if threads == 1:  # one thread: the caller's own, no pool
        assert ran_on == {threading.get_ident()}
    else:  # a pool of that many threads, none of them the caller's
        assert 1 < len(ran_on) <= threads and threading.get_ident() not in ran_on
    merged = executor.map_reduce(None, lambda i, **kw: [slow_square(i, **kw)[0]], lambda a, b: a + b, range(20), offset=2)
    assert merged == [i * i + 2 for i in range(20)]  # folded in item order


def test_the_first_failing_item_in_order_is_raised_and_queued_items_never_start(monkeypatch):
    monkeypatch.setattr(executor, "THREADS", 2)
    started = []

    def task(item):
        started.append(item)
        if item in (3, 5):
            time.sleep(0.01 if item == 3 else 0)
            raise ValueError(f"item {item}")
        return item

    with pytest.raises(ValueError, match="item 3"):
        executor.run_tasks(None, task, range(100))
    time.sleep(0.05)
    assert max(started) < 10  # at most two tasks per thread wait ahead of the one being taken


def test_without_a_scheduler_passes_run_in_process(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    for items in (None, 10, LOCAL_CLUSTER_FROM_ITEMS - 1):
        with dask_client(items=items) as client:
            assert client is None


def test_writers_all_end_before_the_first_failure_in_item_order_is_raised(monkeypatch):
    monkeypatch.setattr(executor, "THREADS", 2)
    ended = []

    def write(item):
        time.sleep(0.05 if item == 7 else 0)  # the last write is slow: raising early would cut it short
        if item in (1, 4):
            raise OSError(f"disk full at {item}")
        ended.append(item)
        return item * 10

    assert executor.run_all(None, write, [0, 2, 3]) == [0, 20, 30]
    ended.clear()
    with pytest.raises(OSError, match="at 1"):
        executor.run_all(None, write, range(8))
    assert sorted(ended) == [0, 2, 3, 5, 6, 7]  # every other write ran to its end
