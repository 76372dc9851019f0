"""Tests of prdist.dataflow.engine.executor.start_all: tasks started now, results handed out as they end.

On a real local cluster (worker processes, TCP on loopback): every item's result arrives once,
under its index, equal to the in-process one; a failed task raises its own error; every future
is released afterwards; and results are fetched straight from workers on this machine unless the
client says otherwise.
"""

from __future__ import annotations

import pytest
from tests.support.dask_release import released
from distributed import Client, LocalCluster

from prdist.dataflow.engine.executor import _on_this_machine, gathers_directly, start_all, worker_threads


def _square_plus(item, offset, *, shift):
    if item == 13:
        raise ValueError("unlucky item")
    return item * item + offset + shift


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    with Client(cluster) as client:
        yield client


def test_in_process_runs_each_item_in_order_when_asked():
    calls = []

    def record(item, *, shift):
        calls.append(item)
        return item + shift

    started = start_all(None, record, [3, 1, 2], broadcast={"shift": 10})
    assert calls == []  # nothing runs before the results are asked for
    assert list(started.as_completed()) == [(0, 13), (1, 11), (2, 12)]
    assert worker_threads(None) == 1


def test_results_arrive_once_each_as_on_the_cluster(client):
    items = list(range(12))
    started = start_all(client, _square_plus, items, 5, broadcast={"shift": 100})
    results = dict(started.as_completed())
    assert results == {i: _square_plus(item, 5, shift=100) for i, item in enumerate(items)}
    assert released(client)  # the tasks and the broadcast value
    assert worker_threads(client) == 2


def test_a_failed_task_raises_its_error_and_releases_the_rest(client):
    started = start_all(client, _square_plus, [1, 13, 2], 0, broadcast={"shift": 0})
    with pytest.raises(ValueError, match="unlucky item"):
        dict(started.as_completed())
    assert released(client)


def test_results_come_straight_from_workers_on_this_machine(cluster, client):
    assert gathers_directly(client)  # LocalCluster listens on 127.0.0.1
    with Client(cluster, direct_to_workers=False) as through_scheduler:
        assert not gathers_directly(through_scheduler)  # the client's own choice wins


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("tcp://127.0.0.1:8786", True),
        ("tls://[::1]:8786", True),
        ("tcp://localhost:8786", True),
        ("inproc://10.0.0.5/123/4", True),
        ("tcp://10.0.0.5:8786", False),
        ("tcp://dask-scheduler:8786", False),
    ],
)
def test_on_this_machine_means_a_loopback_or_in_process_address(address, local):
    assert _on_this_machine(address) is local
