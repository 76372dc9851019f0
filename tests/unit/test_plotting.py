"""matplotlib views: the artists each plot draws, and the one error without matplotlib."""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

import prdist  # noqa: E402
from prdist.population import binormal  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _evaluation(n=20_000):
    rng = np.random.default_rng(1)
    scores = rng.random(n)
    return prdist.evaluate(scores, (rng.random(n) < scores).astype(float))


def _labels(ax) -> list[str]:
    return ax.get_legend_handles_labels()[1]


def test_evaluation_plot_draws_bounds_prefix_grid_and_exact_curve():
    ev = _evaluation()
    ax = ev.plot()
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel().startswith("rank r") and ax.get_ylabel() == "precision p(r)"
    assert _labels(ax) == ["labeled prefix 1\u20133,492", "bounds on p(r)", "lower bound", "upper bound", "grid points", "exact p(r)"]
    band = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(band) == 1
    grid_lo = ax.lines[2]  # lower, upper, grid (lower), grid (upper), exact
    np.testing.assert_array_equal(grid_lo.get_xdata(), ev.plan.grid)
    np.testing.assert_allclose(grid_lo.get_ydata(), ev.bounds.lower(ev.plan.grid))
    table = ev.bounds.table()
    np.testing.assert_allclose(ax.lines[0].get_ydata(), table["precision_lower"])
    np.testing.assert_allclose(ax.lines[1].get_ydata(), table["precision_upper"])
    exact = ax.lines[-1]
    assert exact.get_xdata()[0] == 1 and exact.get_xdata()[-1] == ev.n and exact.get_xdata().size <= 2000
    np.testing.assert_allclose(exact.get_ydata(), ev.exact()["precision"].to_numpy()[exact.get_xdata() - 1])


def test_plot_draws_on_the_axes_it_is_given():
    ev = _evaluation(4000)
    _, (left, right) = plt.subplots(1, 2)
    assert ev.bounds.plot(ax=right) is right
    assert not left.lines and right.lines
    assert "exact p(r)" not in _labels(right)


def test_plot_bands_draws_the_sup_norm_band_pointwise_band_and_curve():
    rng = np.random.default_rng(0)
    scores, labels = binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.4).sample(600, seed=rng.integers(1 << 30))
    bands = prdist.bootstrap_bands(scores, labels, replicates=200, delta=0.2, seed=0)
    ax = prdist.plot_bands(bands)
    assert _labels(ax) == ["sup-norm band", "pointwise band", "empirical PR curve"]
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 1
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_xlabel() == "recall"
    np.testing.assert_allclose(ax.lines[-1].get_ydata(), bands.sort_values("recall", kind="stable")["precision"])


def test_population_models_plot_their_pr_and_roc_curves():
    model = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3)
    ax = model.plot()
    curve = ax.lines[0]
    np.testing.assert_allclose(curve.get_ydata(), model.pr(curve.get_xdata()))
    assert _labels(ax)[0] == "population PR curve"
    roc = model.plot(kind="roc").lines[0]
    np.testing.assert_allclose(roc.get_ydata(), model.roc(roc.get_xdata()))


def test_without_matplotlib_plotting_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'prdist\[plot\]'"):
        _evaluation(500).plot()
