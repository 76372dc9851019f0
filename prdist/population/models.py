"""The score models: prevalence, class distributions, and their exact ROC and PR curves."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from prdist._validation import check_int
from prdist.errors import DataError, ParameterError
from prdist.population.checks import _as_scores, _unit_values
from prdist.population.distributions import _Discrete
from prdist.population.mixture import _Mixture


@dataclass(frozen=True, eq=False, repr=False)
class ScoreModel(ABC):
    """A population model of scores: prevalence pi, positive-score cdf G, negative-score cdf H.

    Build one with a constructor of :mod:`prdist.population` (:func:`~prdist.population.binormal`,
    :func:`~prdist.population.discrete`, ...); all methods are vectorised over their first argument
    and return float64 arrays of its shape.

    Attributes
    ----------
    family : str
        Name of the constructor ("binormal", "uniform", ...).
    parameters : dict
        The constructor's arguments, for reports and manifests.
    prevalence : float
        pi = P(Y = 1), in (0, 1).
    """

    family: str
    parameters: dict
    prevalence: float
    _positive: object = field(repr=False)
    _negative: object = field(repr=False)
    _shape: str = field(repr=False)
    # The score distribution pi G + (1 - pi) H, built by the subclass.
    _mixture: object = field(init=False, repr=False, default=None)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{self.family}({args})"

    def plot(self, ax=None, *, kind: str = "pr"):
        """Draw the exact PR (or ROC, ``kind="roc"``) curve; see :func:`prdist.render.plotting.plot_population`."""
        from prdist.render.plotting import plot_population

        return plot_population(self, ax=ax, kind=kind)

    @property
    def score_support(self) -> tuple[float, float]:
        """(lowest, highest) score the model produces; ends of unbounded supports are +-inf."""
        return float(self._mixture.lower), float(self._mixture.upper)

    # --- class distributions ------------------------------------------------------------------
    def positive_cdf(self, x) -> np.ndarray:
        """G(x) = P(score <= x | Y = 1)."""
        return self._positive.cdf(_as_scores(x, owner=f"{self.family}.positive_cdf"))

    def negative_cdf(self, x) -> np.ndarray:
        """H(x) = P(score <= x | Y = 0)."""
        return self._negative.cdf(_as_scores(x, owner=f"{self.family}.negative_cdf"))

    def score_cdf(self, x) -> np.ndarray:
        """F(x) = pi G(x) + (1 - pi) H(x), the cdf of the score of a random item."""
        return self._mixture.cdf(_as_scores(x, owner=f"{self.family}.score_cdf"))

    # --- curves -------------------------------------------------------------------------------
    def alpha_at(self, beta) -> np.ndarray:
        """False-positive rate alpha(beta) = 1 - H(G^-1(1 - beta)) at recall levels in (0, 1].

        Examples
        --------
        >>> from prdist.population import uniform
        >>> float(uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5).alpha_at(1.0))
        0.5
        """
        beta = _unit_values(beta, name="beta", owner=f"{self.family}.alpha_at")
        return self._alpha(beta)

    def _alpha(self, beta):
        # G^-1(1 - beta) is the generalised inverse of the survival function at beta; solving on
        # the survival side avoids the rounding of 1 - beta at small recall.
        return self._negative.sf(self._positive.isf(beta))

    def pr(self, beta) -> np.ndarray:
        """Population precision PR(beta) at recall levels in (0, 1].

        ``pr(1.0)`` is the left limit at beta = 1 (see the notes of :mod:`prdist.population`); use
        :meth:`pr_limits` for the limit at beta -> 0.

        Examples
        --------
        >>> from prdist.population import uniform
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> float(model.pr(1.0))
        0.6666666666666666
        """
        beta = _unit_values(beta, name="beta", owner=f"{self.family}.pr")
        return self._pr(beta, self._alpha(beta))

    def _pr(self, beta, alpha):
        pi = self.prevalence
        return pi * beta / (pi * beta + (1.0 - pi) * alpha)

    def roc(self, alpha) -> np.ndarray:
        """True-positive rate ROC(alpha) = 1 - G(H^-1(1 - alpha)) at false-positive rates in [0, 1].

        Examples
        --------
        >>> from prdist.population import uniform
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> model.roc([0.0, 0.5, 1.0]).tolist()
        [0.5, 1.0, 1.0]
        """
        alpha = _unit_values(alpha, name="alpha", owner=f"{self.family}.roc", include_zero=True)
        return self._positive.sf(self._negative.isf(alpha))

    def pr_limits(self) -> tuple[float, float]:
        """(lim PR(beta) as beta -> 0, PR(1)): where the PR curve starts and ends (Property P2).

        Examples
        --------
        >>> from prdist.population import uniform
        >>> uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=1 / 11).pr_limits()
        (1.0, 0.1667)
        """
        return self._pr_start(), float(self._pr(1.0, self._alpha(np.float64(1.0))))

    @abstractmethod
    def _pr_start(self) -> float:
        """lim PR(beta) as beta -> 0."""

    def roc_shape(self) -> str:
        """Shape of the ROC curve: "concave", "convex", "linear" (both) or "neither".

        The ROC curve is concave exactly when the likelihood ratio g/h is non-decreasing in the
        score, and then the PR curve is non-increasing (Hughes-Oliver, Property P3); convex when
        g/h is non-increasing. For discrete models the shape is that of the ROC polygon through
        the achievable points (the ratio of the class masses at each value).

        Examples
        --------
        >>> from prdist.population import bibeta
        >>> bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5).roc_shape()
        'concave'
        """
        return self._shape

    # --- resources ------------------------------------------------------------------------------
    def sample(self, n, *, seed=None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` i.i.d. labeled items.

        Parameters
        ----------
        n : int
            Number of items, >= 0.
        seed : None, int, SeedSequence or Generator, default=None
            Seed of ``numpy.random.default_rng``; the same seed gives the same sample.

        Returns
        -------
        scores : ndarray of shape (n,), float64
        labels : ndarray of shape (n,), int8
            Bernoulli(pi) labels; the scores of positives are drawn from G, of negatives from H.

        Examples
        --------
        >>> from prdist.population import binormal
        >>> scores, labels = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3).sample(5, seed=1)
        >>> scores.shape, labels.dtype
        ((5,), dtype('int8'))
        """
        n = check_int(n, name="n", owner=f"{self.family}.sample", low=0)
        rng = np.random.default_rng(seed)
        labels = (rng.random(n) < self.prevalence).astype(np.int8)
        positive = labels == 1
        scores = np.empty(n)
        scores[positive] = self._positive.draw(rng, int(positive.sum()))
        scores[~positive] = self._negative.draw(rng, int(n - positive.sum()))
        return scores, labels

    def score_quantile(self, u) -> np.ndarray:
        """Generalised inverse F^-1(u) = inf{x : F(x) >= u} of the score cdf, u in [0, 1].

        ``score_quantile(0)`` and ``score_quantile(1)`` are the ends of the support (possibly
        infinite). Feeding sorted probability levels gives sorted scores: a resource laid out in
        rank order without a sort. Exact (up to float rounding) for discrete, uniform and
        single-family cdfs; otherwise solved to within a few units in the last place of F.

        Examples
        --------
        >>> from prdist.population import uniform
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> model.score_quantile([0.0, 0.25, 0.5, 1.0]).tolist()
        [0.0, 0.5, 0.75, 1.5]
        """
        u = _unit_values(u, name="u", owner=f"{self.family}.score_quantile", include_zero=True)
        return self._mixture.ppf(u)

    @abstractmethod
    def positive_probability(self, scores) -> np.ndarray:
        """P(Y = 1 | score): pi g / (pi g + (1 - pi) h), or the ratio of masses for discrete models.

        Raises
        ------
        DataError
            A score that is not finite or outside the support of both classes (where the
            probability is undefined).
        """

    def precision_at_fraction(self, t) -> np.ndarray:
        """Expected precision of the top fraction ``t`` in (0, 1] of a resource from this model.

        The top fraction t holds the items above the score x with P(score > x) <= t <=
        P(score >= x); when x is an atom (discrete models) the part of its tie group inside the
        fraction is a random draw from it, as with the hashed tie-break of
        :func:`prdist.ranking.rank_order`. For a resource of N items, p(r) is close to
        ``precision_at_fraction(r / N)``.

        Examples
        --------
        >>> from prdist.population import uniform
        >>> float(uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5).precision_at_fraction(0.25))
        1.0
        """
        t = _unit_values(t, name="t", owner=f"{self.family}.precision_at_fraction")
        return self._precision_at_fraction(t)

    @abstractmethod
    def _precision_at_fraction(self, t):
        """precision_at_fraction after validation."""

    @abstractmethod
    def asymptotic_variance(self, beta) -> np.ndarray:
        """Asymptotic variance of sqrt(n) (PR^(beta) - PR(beta)), for continuous models."""


@dataclass(frozen=True, eq=False, repr=False)
class ContinuousScoreModel(ScoreModel):
    """A score model whose classes have densities g and h.

    Every family but :func:`~prdist.population.discrete` makes one.

    Attributes
    ----------
    top_likelihood_ratio : float
        lim g(x)/h(x) as x rises to the common upper end of the supports (inf allowed); decides
        where the PR curve starts when both classes reach the same top score.
    """

    top_likelihood_ratio: float = math.nan

    def __post_init__(self):
        pi = self.prevalence
        mixture = _Mixture((pi, 1.0 - pi), (self._positive, self._negative))
        object.__setattr__(self, "_mixture", mixture)

    def positive_density(self, x) -> np.ndarray:
        """g(x), the density of the scores of positives."""
        return self._positive.pdf(_as_scores(x, owner=f"{self.family}.positive_density"))

    def negative_density(self, x) -> np.ndarray:
        """h(x), the density of the scores of negatives."""
        return self._negative.pdf(_as_scores(x, owner=f"{self.family}.negative_density"))

    def _pr_start(self) -> float:
        top_pos, top_neg = self._positive.upper, self._negative.upper
        if top_pos != top_neg:
            # Near recall 0 the threshold approaches the top positive score: above every negative
            # (alpha -> 0, precision -> 1) or below some of them (alpha stays positive -> 0).
            return 1.0 if top_pos > top_neg else 0.0
        ratio = self.top_likelihood_ratio
        if math.isinf(ratio):
            return 1.0
        pi = self.prevalence
        # beta / alpha(beta) -> lim g/h at the top (l'Hôpital), so PR -> pi l / (pi l + 1 - pi).
        return pi * ratio / (pi * ratio + 1.0 - pi)

    def positive_probability(self, scores) -> np.ndarray:
        """P(Y = 1 | score) = pi g / (pi g + (1 - pi) h), computed in log space.

        Examples
        --------
        >>> from prdist.population import uniform
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> model.positive_probability([0.25, 0.75, 1.25]).tolist()
        [0.0, 0.5, 1.0]
        """
        owner = f"{self.family}.positive_probability"
        x = _as_scores(scores, owner=owner, finite=True)
        shape, x = x.shape, x.ravel()
        prior_logit = math.log(self.prevalence) - math.log1p(-self.prevalence)

        def logit_at(points):
            with np.errstate(invalid="ignore"):
                return prior_logit + (self._positive.logpdf(points) - self._negative.logpdf(points))

        logit = logit_at(x)
        # 0/0 or inf/inf: at a finite end of the support both densities can vanish (Beta shapes
        # above 1, a lognormal at 0) or blow up (Beta shapes below 1); the probability there is
        # the limit from inside, read one float inside the support.
        undefined = np.isnan(logit)
        if undefined.any():
            lower, upper = self._mixture.lower, self._mixture.upper
            inward = np.where(x <= lower, np.inf, np.where(x >= upper, -np.inf, x))
            at_end = undefined & ((x == lower) | (x == upper)) & np.isfinite(x)
            logit[at_end] = logit_at(np.nextafter(x[at_end], inward[at_end]))
            undefined = np.isnan(logit)
        if undefined.any():
            bad = float(x[undefined].flat[0])
            raise DataError(
                f"The score {bad!r} passed to {owner} lies outside the support of both classes of "
                f"{self!r}, where P(Y = 1 | score) is undefined. Pass scores the model can produce."
            )
        return special.expit(logit).reshape(shape)

    def _precision_at_fraction(self, t):
        # The top fraction t is everything above x = F^-1(1 - t) (no atoms): pi (1 - G(x)) / t.
        x = self._mixture.isf(t)
        return np.minimum(self.prevalence * self._positive.sf(x) / t, 1.0)

    def asymptotic_variance(self, beta) -> np.ndarray:
        """Asymptotic variance sigma^2(beta) of sqrt(n) (PR^(beta) - PR(beta)), beta in (0, 1).

        Clémençon & Vayatis (2009), Eq. 9, as corrected by Hughes-Oliver (every term carries
        PR^4 / beta^2):

            sigma^2 = PR^4 / beta^2 [ (1 - pi) alpha^2 / pi^3
                                      + (1 - pi)^2 s^2 beta (1 - beta) / pi^3
                                      + (1 - pi) alpha (1 - alpha) / pi^2 ],

        s(beta) = h(t) / g(t) at t = G^-1(1 - beta). The three terms are the sampling noise of
        the prevalence, of the positive-score quantile and of the negative-score cdf.

        Raises
        ------
        ParameterError
            beta outside (0, 1).

        Examples
        --------
        >>> from prdist.population import binormal
        >>> model = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
        >>> round(float(model.asymptotic_variance(0.5)), 4)
        0.7327
        """
        owner = f"{self.family}.asymptotic_variance"
        beta = _unit_values(beta, name="beta", owner=owner, include_one=False)
        # t is the left end of any flat part of G, where g > 0: s is finite for beta in (0, 1).
        t = self._positive.isf(beta)
        s = np.exp(self._negative.logpdf(t) - self._positive.logpdf(t))
        alpha = self._negative.sf(t)
        pr = self._pr(beta, alpha)
        pi = self.prevalence
        bracket = (
            (1.0 - pi) * alpha**2 / pi**3
            + (1.0 - pi) ** 2 * s**2 * beta * (1.0 - beta) / pi**3
            + (1.0 - pi) * alpha * (1.0 - alpha) / pi**2
        )
        return pr**4 / beta**2 * bracket


@dataclass(frozen=True, eq=False, repr=False)
class DiscreteScoreModel(ScoreModel):
    """A score model whose classes take finitely many values (:func:`~prdist.population.discrete`).

    Its PR curve consists of non-decreasing pieces separated by downward jumps, and the
    functional empirical PR curve is not consistent for it (Hughes-Oliver, Case F), which is why
    it has no :meth:`asymptotic_variance`.
    """

    def __post_init__(self):
        pi = self.prevalence
        pos, neg = self._positive, self._negative
        values = np.concatenate((pos.values, neg.values))
        masses = np.concatenate((pi * pos.masses, (1.0 - pi) * neg.masses))
        object.__setattr__(self, "_mixture", _Discrete(values, masses))

    @property
    def values(self) -> np.ndarray:
        """Every score value the model can produce, increasing."""
        return self._mixture.values

    def _pr_start(self) -> float:
        # For recall below the mass of the top positive value the threshold is that value; the
        # curve tends to 1 if no negative lies strictly above it, and to 0 otherwise.
        return 1.0 if self._negative.sf(self._positive.upper) == 0.0 else 0.0

    def positive_probability(self, scores) -> np.ndarray:
        """P(Y = 1 | score = x) = pi P(x | 1) / P(score = x), at values the model produces.

        Examples
        --------
        >>> from prdist.population import discrete
        >>> model = discrete(neg=[0.1, 0.2], pos=[0.2, 0.3], prevalence=0.5)
        >>> model.positive_probability([0.1, 0.2, 0.3]).tolist()
        [0.0, 0.5, 1.0]
        """
        owner = f"{self.family}.positive_probability"
        x = _as_scores(scores, owner=owner, finite=True)
        mass = self._mixture.mass(x)
        if np.any(mass == 0.0):
            bad = float(x[mass == 0.0].flat[0])
            raise DataError(
                f"The score {bad!r} passed to {owner} is not one of the values of {self!r}, where "
                "P(Y = 1 | score) is undefined. Pass scores from model.values."
            )
        return np.minimum(self.prevalence * self._positive.mass(x) / mass, 1.0)

    def _precision_at_fraction(self, t):
        pi = self.prevalence
        mix = self._mixture
        # Atom x with P(score > x) <= t <= P(score >= x); the top fraction takes everything above
        # x plus a share t - P(score > x) of x's tie group, whose positive rate is eta(x).
        x = mix.isf(t)
        above = mix.sf(x)
        eta = pi * self._positive.mass(x) / mix.mass(x)
        return np.minimum((pi * self._positive.sf(x) + (t - above) * eta) / t, 1.0)

    def asymptotic_variance(self, beta) -> np.ndarray:
        """Not defined for discrete scores: raises :class:`ParameterError`."""
        raise ParameterError(
            f"asymptotic_variance needs class densities, but {self!r} is discrete: the functional "
            "empirical PR curve is not even consistent for discrete scores (Hughes-Oliver, "
            "section 3.2). Use a continuous model (binormal, bibeta, ...) or a bootstrap."
        )
