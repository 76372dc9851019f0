"""Tests of prdist.dataflow.run.bands: bootstrap replicates scattered over a real Dask cluster.

The claim under test is determinism: the bands are bit-for-bit the same in one process and on
clusters of 1 and 2 worker processes, because batch boundaries and seeds do not depend on the
workers. The task stream confirms that the 2-worker cluster really shares the batches, in as many
tasks as the cluster has threads times TASKS_PER_THREAD.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.support.dask_release import released
from distributed import Client, LocalCluster, get_task_stream

from prdist.bootstrap import replicates as bootstrap, batches as bootstrap_batches, laws as bootstrap_laws
from prdist import population
from prdist.bootstrap.batches import replicate_batch_sizes
from prdist.dataflow.run.bands import (
    TASKS_PER_THREAD,
    bootstrap_band_result,
    bootstrap_bands,
    bootstrap_replicates,
    submit_replicate_batches,
)
from prdist.errors import ParameterError

N = 120_000
REPLICATES = 150


def _cluster(workers: int):
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",  # no fixed port: other clusters may run on this machine
        scheduler_port=0,
    )
    client = Client(cluster)
    return cluster, client


@pytest.fixture(scope="module")
def clients():
    made = [_cluster(1), _cluster(2)]
    yield {1: made[0][1], 2: made[1][1]}
    for cluster, client in made:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def sample():
    return population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.1).sample(N, seed=11)


def test_sample_spans_several_batches():
    assert len(replicate_batch_sizes(REPLICATES)) >= 4


@pytest.mark.parametrize("method", ["smoothed-importance", "stratified", "naive"])
def test_bands_identical_in_process_and_on_1_and_2_workers(clients, sample, method):
    scores, labels = sample
    local = bootstrap_band_result(scores, labels, replicates=REPLICATES, method=method, seed=2017)
    for workers, client in clients.items():
        with get_task_stream(client) as stream:
            remote = bootstrap_band_result(
                scores, labels, replicates=REPLICATES, method=method, seed=2017, client=client
            )
        pd.testing.assert_frame_equal(remote.table, local.table, check_exact=True)
        assert remote.statistics == local.statistics
        batch_tasks = [t for t in stream.data if str(t["key"]).startswith("replicate_batches")]
        assert len({task["worker"] for task in batch_tasks}) == workers  # every worker ran some


def test_tasks_follow_the_workers_while_batches_and_bits_do_not(clients, sample):
    # 24 batches: one worker runs them as 8 tasks of 3, two workers as 16 tasks of 1 or 2.
    scores, labels = sample
    replicates = 10_000
    batches = len(replicate_batch_sizes(replicates))
    assert batches == 24
    local = bootstrap_replicates(scores, labels, replicates=replicates, seed=9)
    for workers, client in clients.items():
        with get_task_stream(client) as stream:
            remote = bootstrap_replicates(
                scores, labels, replicates=replicates, seed=9, client=client
            )
        np.testing.assert_array_equal(remote.replicate_precision, local.replicate_precision)
        np.testing.assert_array_equal(remote.n_positive, local.n_positive)
        assert remote.redraws == local.redraws
        tasks = [t for t in stream.data if str(t["key"]).startswith("replicate_batches")]
        assert len(tasks) == min(batches, TASKS_PER_THREAD * workers)
        assert len({task["worker"] for task in tasks}) == workers
        # Each class law tabulated once, on its own worker when there are two.
        laws = [t for t in stream.data if str(t["key"]).startswith("tabulate_")]
        assert len(laws) == 2 and len({task["worker"] for task in laws}) == workers
    assert all(released(client) for client in clients.values())


def test_replicates_bit_identical(clients, sample):
    scores, labels = sample
    # A rare-positive sample so that the weights are not all equal.
    rare = labels.copy()
    rare[np.flatnonzero(labels)[25:]] = 0
    local = bootstrap_replicates(scores, rare, replicates=REPLICATES, seed=5)
    assert local.ess < REPLICATES
    for client in clients.values():
        remote = bootstrap_replicates(scores, rare, replicates=REPLICATES, seed=5, client=client)
        for field in ("replicate_precision", "n_positive", "log_weight", "precision"):
            np.testing.assert_array_equal(getattr(remote, field), getattr(local, field))
        assert remote.ess == local.ess


def test_laws_tabulated_by_the_caller_give_the_same_rows(clients, sample):
    scores, labels = sample
    setup, seed_seq, sizes, _ = bootstrap._prepare(
        scores, labels, owner="test", replicates=REPLICATES, method="smoothed-importance",
        seed=3, beta=None, eps_beta=None, bandwidth=None, instrumental_rate=None,
    )
    assert isinstance(setup.positive_law, bootstrap_laws.LawSource)
    seeds = seed_seq.spawn(len(sizes))
    expected = bootstrap_batches.run_replicate_batches(setup, sizes, seeds).precision
    for given in (setup, bootstrap_batches.tabulate_laws(setup)):
        [rows] = submit_replicate_batches(clients[2], given, sizes, seeds).result()
        np.testing.assert_array_equal(rows.precision, expected)


def test_submit_checks_its_arguments(clients):
    with pytest.raises(ParameterError, match="one seed per batch"):
        submit_replicate_batches(clients[1], None, [1, 2], [np.random.SeedSequence(0)])
