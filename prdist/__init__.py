"""prdist: guaranteed bounds and confidence bands on the precision of massive ranked resources."""

from . import population
from .bootstrap import BootstrapReplicates, BootstrapWarning
from .bounds import PaulaBounds, paula_bounds, precision_function
from .confidence import confidence_margins, monotone_rate_test
from .curves import EmpiricalPR, TiedScoresWarning, empirical_pr, exact_pr_points
from .plan import PaulaPlan, plan_paula
from .sampling import (
    RandomEstimate,
    RandomPlan,
    StratifiedBudget,
    StratifiedEstimate,
    StratifiedPlan,
    estimate_random,
    estimate_stratified,
    plan_random,
    plan_stratified,
    point_estimate_budget,
    random_sampling_budget,
    random_sampling_reliable_from,
    stratified_budget,
)

__version__ = "0.1.0"


def __getattr__(name):
    # bootstrap_bands and bootstrap_replicates take client= (a Dask cluster): they live in the
    # dataflow layer, imported on first use so that `import prdist` does not import Dask.
    if name in ("bootstrap_bands", "bootstrap_replicates"):
        from .dataflow import bands

        return getattr(bands, name)
    raise AttributeError(f"module 'prdist' has no attribute {name!r}")

__all__ = [
    "BootstrapReplicates",
    "BootstrapWarning",
    "bootstrap_bands",
    "bootstrap_replicates",
    "confidence_margins",
    "monotone_rate_test",
    "EmpiricalPR",
    "TiedScoresWarning",
    "empirical_pr",
    "exact_pr_points",
    "population",
    "PaulaBounds",
    "PaulaPlan",
    "RandomEstimate",
    "RandomPlan",
    "StratifiedBudget",
    "StratifiedEstimate",
    "StratifiedPlan",
    "estimate_random",
    "estimate_stratified",
    "paula_bounds",
    "plan_paula",
    "plan_random",
    "plan_stratified",
    "point_estimate_budget",
    "precision_function",
    "random_sampling_budget",
    "random_sampling_reliable_from",
    "stratified_budget",
]
