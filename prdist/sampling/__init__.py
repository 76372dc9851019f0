"""The classical sampling baselines of the PAULA paper (Sabharwal & Sedghi, UAI 2017).

Two ways to estimate the precision function p(r) of a ranked resource of n items from sampled
labels, against which PAULA's deterministic plan is measured:

- **Uniform random sampling** (sections 2.1 and 3): label ``size`` ranks drawn uniformly without
  replacement and use the precision of the sampled items at or above rank r as the surrogate
  p'(rs/n) of p(r), with pointwise Hoeffding (Eq. 3) or exact Clopper–Pearson intervals. Its
  budgets are Eq. 2 (:func:`point_estimate_budget`), Eq. 4 (:func:`random_sampling_reliable_from`)
  and Eq. 5 (:func:`random_sampling_budget`).
- **Logarithmic stratified sampling** (section 4.4.1, Algorithm 1): label the prefix 1..g_l and
  keep, for every grid point g_k, a sample X_k of s draws from 1..g_k that reuses most draws of
  X_{k-1}; q(g_k) = S_k / s. Its budget is Theorem 2 (:func:`stratified_budget`).

Everything here is pure NumPy/SciPy; randomness comes only from an explicit ``seed``. One module
per idea, behind these names: ``random`` (uniform plans and estimates), ``stratified`` (Algorithm
1's plans and estimates), ``budgets`` (the label counts of both) and ``checks``.
"""

# In the order of the paper, which the reference page keeps (it renders them in import order).
from prdist.sampling.random import RandomPlan, RandomEstimate, plan_random, estimate_random  # isort: skip
from prdist.sampling.budgets import (
    point_estimate_budget,
    random_sampling_reliable_from,
    random_sampling_budget,
)
from prdist.sampling.stratified import (
    StratifiedPlan,
    plan_stratified,
    StratifiedEstimate,
    estimate_stratified,
)
from prdist.sampling.budgets import StratifiedBudget, stratified_budget  # isort: skip

__all__ = [
    "RandomPlan",
    "RandomEstimate",
    "StratifiedPlan",
    "StratifiedEstimate",
    "StratifiedBudget",
    "plan_random",
    "estimate_random",
    "point_estimate_budget",
    "random_sampling_reliable_from",
    "random_sampling_budget",
    "plan_stratified",
    "estimate_stratified",
    "stratified_budget",
]
