"""Population score models with exact ROC and PR curves (Hughes-Oliver; Clémençon & Vayatis 2009).

A score model fixes the prevalence pi = P(Y = 1), the cdf G of the scores of positives and the
cdf H of the scores of negatives. Its curves are

    ROC(alpha) = 1 - G(H^-1(1 - alpha))            true-positive rate at false-positive rate alpha
    alpha(beta) = 1 - H(G^-1(1 - beta))            false-positive rate at recall beta
    PR(beta) = pi beta / (pi beta + (1 - pi) alpha(beta))

with the generalised inverse F^-1(u) = inf{x : F(x) >= u}. Both 1 - G and 1 - H count scores
*strictly above* the threshold, so for discrete scores negatives tied with the threshold count as
below it, exactly as in :func:`prdist.curves.empirical_pr`. At the ends of the unit interval the
inverses take their one-sided limits: F^-1(0) is the lower end of the support of F and F^-1(1) the
upper end (possibly infinite). So ``pr(1)`` is the limit of PR(beta) as beta -> 1; for example a
positive class whose scores start above the lowest negative scores ends at a precision above pi
(Hughes-Oliver, Case D).

The models are the test oracles of the empirical estimators and the generators of synthetic
resources with a known truth: :meth:`ScoreModel.sample` draws labeled scores,
:meth:`ScoreModel.score_quantile` inverts the score cdf F = pi G + (1 - pi) H (to lay out a sorted
resource without sorting), :meth:`ScoreModel.positive_probability` gives P(Y = 1 | score) and
:meth:`ScoreModel.precision_at_fraction` the precision of the top fraction of a resource.

Constructors: :func:`binormal`, :func:`bilognormal`, :func:`bibeta`, :func:`uniform`,
:func:`discrete`, :func:`bumped` (a non-monotone P(Y = 1 | score)), and :func:`chance`,
:func:`perfect_separation`, :func:`reverse_separation` with :func:`reference_curves` and
:func:`pr_lower_bound` for the reference curves of Hughes-Oliver's properties P4-P6.

One module per idea, behind these names: ``distributions`` (the scores of one class),
``mixture`` (mixtures and their quantile solver), ``models`` (the model classes and their
curves), ``families`` (the constructors), ``reference`` (the P4-P6 curves) and ``checks``.
"""

# In the order of the reference page (docs/api/population.md renders them in import order).
from prdist.population.models import ScoreModel, ContinuousScoreModel, DiscreteScoreModel  # isort: skip
from prdist.population.families import binormal, bilognormal, bibeta, uniform, discrete, bumped  # isort: skip
from prdist.population.reference import (
    chance,
    perfect_separation,
    reverse_separation,
    pr_lower_bound,
    ReferenceCurves,
    reference_curves,
)

__all__ = [
    "ScoreModel",
    "ContinuousScoreModel",
    "DiscreteScoreModel",
    "ReferenceCurves",
    "binormal",
    "bilognormal",
    "bibeta",
    "uniform",
    "discrete",
    "bumped",
    "chance",
    "perfect_separation",
    "reverse_separation",
    "reference_curves",
    "pr_lower_bound",
]
