"""In-process passes on threads: the same results in the same order as one thread, and errors as one thread raises them.

The order in which tasks finish is forced with events (never with sleeps): a task that must end
after another waits for that one's event, with WAIT seconds as a bound that fails the test.
"""

from __future__ import annotations

import threading

import pytest

from prdist.dataflow.engine import executor
from prdist.dataflow.engine.cluster import LOCAL_CLUSTER_FROM_ITEMS, dask_client


WAIT = 30.0  # seconds: far beyond any wait these tasks need; reaching it fails the test


def out_of_order_squares(items: int, threads: int):
    """A task ``(item * item * scale + offset, thread id)``; on threads, each even item ends only
    after the next odd item has ended, so results finish out of item order."""
    ended = [threading.Event() for _ in range(items)]

    def square(item, scale=1, *, offset=0):
        if threads > 1 and item % 2 == 0 and item + 1 < items:
            assert ended[item + 1].wait(WAIT), f"item {item + 1} never ended"
        ended[item].set()
        return (item * item) * scale + offset, threading.get_ident()

    return square


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_results_come_in_item_order_whatever_the_threads(monkeypatch, threads):
    monkeypatch.setattr(executor, "THREADS", threads)
    results = executor.run_tasks(None, out_of_order_squares(20, threads), range(20), 3, broadcast={"offset": 1})
    assert [r for r, _ in results] == [i * i * 3 + 1 for i in range(20)]
    ran_on = {t for _, t in results}
    if threads == 1:  # one thread: the caller's own, no pool
        assert ran_on == {threading.get_ident()}
    else:  # a pool of that many threads, none of them the caller's
        assert 1 < len(ran_on) <= threads and threading.get_ident() not in ran_on
    square = out_of_order_squares(20, threads)
    merged = executor.map_reduce(None, lambda i, **kw: [square(i, **kw)[0]], lambda a, b: a + b, range(20), offset=2)
    assert merged == [i * i + 2 for i in range(20)]  # folded in item order


def test_the_first_failing_item_in_order_is_raised_and_queued_items_never_start(monkeypatch):
    monkeypatch.setattr(executor, "THREADS", 2)
    started = []
    five_failed = threading.Event()

    def task(item):
        started.append(item)
        if item == 3:  # fails after item 5 has failed: the first failure in item order is raised
            assert five_failed.wait(WAIT), "item 5 never ran while item 3 was running"
            raise ValueError("item 3")
        if item == 5:
            five_failed.set()
            raise ValueError("item 5")
        return item

    with pytest.raises(ValueError, match="item 3"):
        executor.run_tasks(None, task, range(100))
    # run_tasks returns once its threads have stopped: nothing starts after it
    assert max(started) < 10  # at most two tasks per thread wait ahead of the one being taken


def test_without_a_scheduler_passes_run_in_process(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    for items in (None, 10, LOCAL_CLUSTER_FROM_ITEMS - 1):
        with dask_client(items=items) as client:
            assert client is None


def test_writers_all_end_before_the_first_failure_in_item_order_is_raised(monkeypatch):
    monkeypatch.setattr(executor, "THREADS", 2)
    ended = []
    one_failed = threading.Event()

    def write(item):
        if item == 7:  # the last write ends after the first failure: raising at that failure would cut it short
            assert one_failed.wait(WAIT), "item 1 never failed"
        if item in (1, 4):
            if item == 1:
                one_failed.set()
            raise OSError(f"disk full at {item}")
        ended.append(item)
        return item * 10

    assert executor.run_all(None, write, [0, 2, 3]) == [0, 20, 30]
    ended.clear()
    with pytest.raises(OSError, match="at 1"):
        executor.run_all(None, write, range(8))
    assert sorted(ended) == [0, 2, 3, 5, 6, 7]  # every other write ran to its end
