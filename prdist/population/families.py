"""The constructors of score models by family, and the ROC shape each one has."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from prdist._validation import check_float
from prdist.errors import ParameterError
from prdist.population.checks import _interval, _location_scale, _prevalence, _shapes, _value_list
from prdist.population.distributions import _Beta, _DiscreteClass, _LogNormal, _Normal, _Uniform
from prdist.population.mixture import _Mixture
from prdist.population.models import ContinuousScoreModel, DiscreteScoreModel


def binormal(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Normal scores in each class (Hughes-Oliver, Case A).

    Parameters
    ----------
    neg, pos : tuple of (mean, standard deviation)
        Parameters of the negative and positive score distributions; sd > 0.
    prevalence : float
        pi = P(Y = 1), in (0, 1).

    Returns
    -------
    ContinuousScoreModel
        Its ROC curve is concave (PR non-increasing) when the standard deviations are equal and
        the positive mean is the larger one.

    Examples
    --------
    >>> model = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
    >>> model.roc_shape(), model.pr_limits()
    ('concave', (1.0, 0.5))
    """
    return _normal_family("binormal", _Normal, neg=neg, pos=pos, prevalence=prevalence)


def _normal_family(owner: str, component, *, neg, pos, prevalence) -> ContinuousScoreModel:
    """A model whose classes are ``component(mu, sigma)`` (normal, or lognormal: an increasing
    transform of one, hence the same binormal ROC shape and tail ratio)."""
    pi = _prevalence(prevalence, owner)
    mu_n, sd_n = _location_scale(neg, "neg", owner)
    mu_p, sd_p = _location_scale(pos, "pos", owner)
    return ContinuousScoreModel(
        family=owner,
        parameters={"neg": (mu_n, sd_n), "pos": (mu_p, sd_p), "prevalence": pi},
        prevalence=pi,
        _positive=_Mixture((1.0,), (component(mu_p, sd_p),)),
        _negative=_Mixture((1.0,), (component(mu_n, sd_n),)),
        _shape=_binormal_shape(mu_n, sd_n, mu_p, sd_p),
        top_likelihood_ratio=_Normal(mu_n, sd_n).normal_tail_ratio(mu_p, sd_p),
    )


def bilognormal(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Lognormal scores in each class (Hughes-Oliver, Case A*).

    ``neg`` and ``pos`` are (mu, sigma) of the underlying normal: the score is exp(N(mu,
    sigma^2)). Since log is increasing, the ROC and PR curves equal those of
    ``binormal(neg=neg, pos=pos, prevalence=prevalence)`` (Property P7).

    Examples
    --------
    >>> a = bilognormal(neg=(0, 1), pos=(1, 1), prevalence=0.2)
    >>> b = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.2)
    >>> bool(np.allclose(a.pr([0.1, 0.5, 0.9]), b.pr([0.1, 0.5, 0.9]), rtol=1e-12))
    True
    """
    return _normal_family("bilognormal", _LogNormal, neg=neg, pos=pos, prevalence=prevalence)


def bibeta(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Beta-distributed scores in each class (Hughes-Oliver, Case C).

    Parameters
    ----------
    neg, pos : tuple of (a, b)
        Shape parameters of the negative and positive Beta(a, b) distributions, both > 0.
    prevalence : float
        pi, in (0, 1).

    Examples
    --------
    >>> model = bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5)
    >>> model.pr_limits()
    (1.0, 0.5)
    """
    owner = "bibeta"
    pi = _prevalence(prevalence, owner)
    a_n, b_n = _shapes(neg, "neg", owner)
    a_p, b_p = _shapes(pos, "pos", owner)
    # The log likelihood ratio (a_p - a_n) log x + (b_p - b_n) log(1 - x) is monotone on (0, 1)
    # exactly when its two slopes push the same way.
    da, db = a_p - a_n, b_p - b_n
    if da == 0 and db == 0:
        shape = "linear"
    elif da >= 0 and db <= 0:
        shape = "concave"
    elif da <= 0 and db >= 0:
        shape = "convex"
    else:
        shape = "neither"
    # Near x = 1 the densities behave as (1 - x)^(b - 1) / B(a, b).
    if b_p != b_n:
        top = math.inf if b_p < b_n else 0.0
    else:
        top = math.exp(special.betaln(a_n, b_n) - special.betaln(a_p, b_p))
    return ContinuousScoreModel(
        family=owner,
        parameters={"neg": (a_n, b_n), "pos": (a_p, b_p), "prevalence": pi},
        prevalence=pi,
        _positive=_Mixture((1.0,), (_Beta(a_p, b_p),)),
        _negative=_Mixture((1.0,), (_Beta(a_n, b_n),)),
        _shape=shape,
        top_likelihood_ratio=top,
    )


def uniform(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Uniform scores in each class: overlapping, nested, disjoint or reversed ranges.

    Hughes-Oliver's Case D is ``uniform(neg=(0, 1), pos=(0.5, 1.5), ...)`` and Case E its
    reverse ``uniform(neg=(0.5, 1.5), pos=(0, 1), ...)``.

    Parameters
    ----------
    neg, pos : tuple of (low, high)
        Ranges of the negative and positive scores, low < high.
    prevalence : float
        pi, in (0, 1).

    Examples
    --------
    >>> case_d = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
    >>> case_d.pr_limits(), case_d.roc_shape()
    ((1.0, 0.6666666666666666), 'concave')
    >>> case_e = uniform(neg=(0.5, 1.5), pos=(0, 1), prevalence=0.5)
    >>> case_e.roc_shape(), float(case_e.roc(1.0))
    ('convex', 0.5)
    """
    owner = "uniform"
    pi = _prevalence(prevalence, owner)
    lo_n, hi_n = _interval(neg, "neg", owner)
    lo_p, hi_p = _interval(pos, "pos", owner)
    positive, negative = _Uniform(lo_p, hi_p), _Uniform(lo_n, hi_n)
    # The likelihood ratio is constant between consecutive range ends; read it at the middles
    # where some class has mass.
    ends = np.unique([lo_n, hi_n, lo_p, hi_p])
    middles = 0.5 * (ends[1:] + ends[:-1])
    log_g, log_h = positive.logpdf(middles), negative.logpdf(middles)
    covered = ~(np.isneginf(log_g) & np.isneginf(log_h))
    shape = _shape_of_ratio(log_g[covered], log_h[covered])
    return ContinuousScoreModel(
        family=owner,
        parameters={"neg": (lo_n, hi_n), "pos": (lo_p, hi_p), "prevalence": pi},
        prevalence=pi,
        _positive=_Mixture((1.0,), (positive,)),
        _negative=_Mixture((1.0,), (negative,)),
        _shape=shape,
        # Used only when both ranges end at the same score: the ratio of the two densities.
        top_likelihood_ratio=(hi_n - lo_n) / (hi_p - lo_p),
    )


def discrete(*, neg, pos, prevalence) -> DiscreteScoreModel:
    """Scores from finitely many values (Hughes-Oliver, Case F).

    Parameters
    ----------
    neg, pos : sequence of float
        Each class's score is uniform over the entries of its list; a value listed k times has
        k times the mass.
    prevalence : float
        pi, in (0, 1).

    Examples
    --------
    >>> case_f = discrete(neg=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7],
    ...                   pos=[0.2, 0.35, 0.5, 0.75, 0.9], prevalence=0.5)
    >>> case_f.pr_limits(), case_f.roc_shape()
    ((1.0, 0.625), 'neither')
    """
    owner = "discrete"
    pi = _prevalence(prevalence, owner)
    neg_values = _value_list(neg, "neg", owner)
    pos_values = _value_list(pos, "pos", owner)
    negative = _DiscreteClass(neg_values)
    positive = _DiscreteClass(pos_values)
    values = np.union1d(negative.values, positive.values)
    shape = _shape_of_ratio(
        _log_or_neginf(positive.mass(values)), _log_or_neginf(negative.mass(values))
    )
    return DiscreteScoreModel(
        family=owner,
        parameters={"neg": neg_values.tolist(), "pos": pos_values.tolist(), "prevalence": pi},
        prevalence=pi,
        _positive=positive,
        _negative=negative,
        _shape=shape,
    )


def bumped(base: ContinuousScoreModel, *, bump) -> ContinuousScoreModel:
    """Move a share of the positives of ``base`` into a normal bump: a non-monotone model.

    The positive scores follow (1 - w) G_base + w N(mu, sd^2); the negatives and the prevalence
    are those of ``base``. A bump of positives at low scores makes P(Y = 1 | score) rise again
    where ``base`` has mostly negatives, so precision is not monotone in rank and the PAULA
    monotonicity assumptions fail: the model for testing the assumption diagnostics.

    Parameters
    ----------
    base : ContinuousScoreModel
        Any continuous model (including another bumped one).
    bump : tuple of (mu, sd, weight)
        Location and scale (sd > 0) of the bump on the score scale, and the share w in (0, 1) of
        positives it holds.

    Examples
    --------
    >>> base = binormal(neg=(0, 1), pos=(2, 1), prevalence=0.3)
    >>> model = bumped(base, bump=(-2.5, 0.3, 0.2))
    >>> eta = model.positive_probability([-2.5, -1.0, 2.0])
    >>> bool(eta[0] > eta[1] < eta[2]), model.roc_shape()
    (True, 'neither')
    """
    owner = "bumped"
    if not isinstance(base, ContinuousScoreModel):
        raise ParameterError(
            f"The 'base' parameter of {owner} must be a continuous score model (binormal, "
            f"bilognormal, bibeta, uniform or bumped). Got {base!r} instead."
        )
    try:
        mu, sd, weight = bump
    except (TypeError, ValueError):
        raise ParameterError(
            f"The 'bump' parameter of {owner} must be a tuple (mu, sd, weight). Got {bump!r} "
            "instead."
        ) from None
    mu = check_float(mu, name="bump[0] (mu)", owner=owner)
    sd = check_float(sd, name="bump[1] (sd)", owner=owner, low=0.0, low_open=True)
    weight = check_float(
        weight, name="bump[2] (weight)", owner=owner,
        low=0.0, high=1.0, low_open=True, high_open=True,
    )
    positive = _Mixture((1.0 - weight, weight), (base._positive, _Normal(mu, sd)))
    negative = base._negative
    if math.isinf(negative.upper):
        # Both classes reach +inf; the bump adds w * lim phi/h to the base's ratio at the top.
        (neg_component,) = negative.components
        top = (1.0 - weight) * base.top_likelihood_ratio + weight * neg_component.normal_tail_ratio(
            mu, sd
        )
    else:
        top = math.inf  # the bump's normal tail outlasts every bounded negative score
    model = ContinuousScoreModel(
        family=owner,
        parameters={"base": base, "bump": (mu, sd, weight)},
        prevalence=base.prevalence,
        _positive=positive,
        _negative=negative,
        _shape="neither",
        top_likelihood_ratio=top,
    )
    object.__setattr__(model, "_shape", _numeric_shape(model))
    return model


def _log_or_neginf(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _shape_of_ratio(log_g, log_h, *, rtol: float = 0.0) -> str:
    """Classify the ROC from the log likelihood ratio read at increasing scores."""
    with np.errstate(invalid="ignore"):
        ratio = log_g - log_h  # +inf / -inf where one class has no mass
    with np.errstate(invalid="ignore"):
        slack = rtol * np.maximum(np.abs(ratio[1:]), np.abs(ratio[:-1]))
    slack = np.where(np.isfinite(slack), slack, 0.0)
    up = np.all(ratio[:-1] <= ratio[1:] + slack)
    down = np.all(ratio[:-1] >= ratio[1:] - slack)
    if up and down:
        return "linear"
    if up:
        return "concave"
    if down:
        return "convex"
    return "neither"


def _binormal_shape(mu_n, sd_n, mu_p, sd_p) -> str:
    if sd_n != sd_p:
        # The log likelihood ratio is a parabola: it turns once, so the ROC has a hook.
        return "neither"
    if mu_p == mu_n:
        return "linear"
    return "concave" if mu_p > mu_n else "convex"


def _numeric_shape(model: ContinuousScoreModel) -> str:
    # The likelihood ratio at the score quantiles 1e-6 .. 1 - 1e-6, up to rounding.
    x = model._mixture.ppf(np.linspace(1e-6, 1.0 - 1e-6, 4001))
    return _shape_of_ratio(model._positive.logpdf(x), model._negative.logpdf(x), rtol=1e-9)
