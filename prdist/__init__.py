"""prdist: guaranteed bounds and confidence bands on the precision of massive ranked resources.

The public names are imported on first use (PEP 562): ``import prdist`` alone, or the command
line's ``prdist --help``, does not pay for SciPy, pandas or Dask.
"""

import importlib
import importlib.util

__version__ = "0.1.0"

#: Public name -> the module of prdist that defines it.
_LAZY = {
    "population": None,  # a module of its own
    **dict.fromkeys(("Bands", "BandStatistics", "BootstrapReplicates", "BootstrapWarning"), "bootstrap.replicates"),
    # They take client= (a Dask cluster): they live in the dataflow layer.
    **dict.fromkeys(("bootstrap_band_result", "bootstrap_bands", "bootstrap_replicates"), "dataflow.run.bands"),
    **dict.fromkeys(("PaulaBounds", "paula_bounds", "precision_function"), "paula.bounds"),
    **dict.fromkeys(("confidence_margins", "monotone_rate_test"), "paula.confidence"),
    **dict.fromkeys(("EmpiricalPR", "TiedScoresWarning", "empirical_pr", "exact_pr_points"), "curves"),
    **dict.fromkeys(("PaulaPlan", "plan_paula"), "paula.plan"),
    **dict.fromkeys(("Evaluation", "evaluate"), "evaluation"),
    **dict.fromkeys(("plot_bands", "plot_bounds", "plot_population"), "render.plotting"),
    **dict.fromkeys(("RandomEstimate", "RandomPlan", "estimate_random", "plan_random"), "sampling.random"),
    **dict.fromkeys(
        ("StratifiedEstimate", "StratifiedPlan", "estimate_stratified", "plan_stratified"), "sampling.stratified"
    ),
    **dict.fromkeys(
        (
            "StratifiedBudget", "point_estimate_budget", "random_sampling_budget", "random_sampling_reliable_from",
            "stratified_budget",
        ),
        "sampling.budgets",
    ),  # fmt: skip
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        # prdist.paula.plan, prdist.render, ...: a submodule, imported on first use like the names.
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module 'prdist' has no attribute {name!r}")
        return importlib.import_module(f".{name}", __name__)
    module = importlib.import_module(f".{_LAZY[name] or name}", __name__)
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
