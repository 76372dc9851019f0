"""Several systems (or releases) sharing one pool of labels (Chaganty et al., EMNLP 2017).

Systems i = 1..m each output a set X_i of keyed items and carry a sampling distribution p_i over
it. Every system j has n_j items drawn i.i.d. from p_j; one label per key serves every system and
every release that contains the item. The estimators of the paper's appendix then give, for every
system at once:

- **precision** π_i = E_{x~p_i}[f(x)] (the ordinary precision when p_i is uniform, the precision
  at k for a top-k distribution, a score-weighted precision otherwise) by the joint importance
  sampling estimator

      π̂_i = Σ_j (w_ij / n_j) Σ_{x ∈ X̂_j} p_i(x) f(x) / q_i(x),   q_i = Σ_j w_ij p_j,

  unbiased with the variance of Theorem 1, beside the simple estimator (mean label of system i's
  own draws) — :func:`estimate_precision`;
- **recall** r_i = θ ν_i: the self-normalised pooled recall ν̂_i times the pool recall θ̂ from an
  exhaustive sample of correct items, with the product variance of Lemma 1 —
  :func:`estimate_recall`;
- **the sample size a new system (or release) needs** for a target confidence-interval half-width,
  by bisection on the conservative variance of appendix B.4 — :func:`required_sample_size`.

The universe is kept compact: a :class:`JointSample` holds only the drawn items, with p_j(x) of
every system j for each of them, the draw counts, the labels, and two small summaries of the full
outputs (the overlaps <p_i, p_j> and the distinct support patterns) that the default weights and
the check "q_i > 0 wherever p_i > 0" need.

Mixture weights. Appendix B.3 ("Picking heuristic w_ij") is empty in the published text; the
default here is the authors' own (``compute_weights(method="heuristic")`` in
github.com/arunchaganty/kbp-online, src/kbpo/evaluation.py): w_ij ∝ n_j <p_i, p_j>, which gives no
weight to systems that share nothing with system i. ``"balance"`` is Veach's balance heuristic
w_ij ∝ n_j; any matrix with rows summing to one that keeps q_i > 0 on X_i is accepted.

Variances. Theorem 1 writes Var π̂_i as Σ_j (w_ij² / n_j) Var_{p_j}[p_i f / q_i]; every per-system
variance is estimated with the unbiased sample variance (ddof = 1) of that system's draws, so the
variance estimate is **unbiased** too (it needs n_j >= 2 for every system that carries weight).
Recall variances are delta-method and plug-in estimates (ν̂ is a ratio, hence only consistent).
"""

from __future__ import annotations

import math
import numbers
import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._validation import as_label_array, check_choice, check_confidence, check_float, check_int
from .errors import AwaitingLabels, DataError, ParameterError
from .params import K, POWER, WEIGHTS
from .ranking import as_key_array, rank_order

__all__ = [
    "SamplingDistribution",
    "SystemOutput",
    "JointSample",
    "draw_joint_sample",
    "missing_labels",
    "mixture_weights",
    "PrecisionEstimate",
    "estimate_precision",
    "pool_membership",
    "RecallEstimate",
    "estimate_recall",
    "SampleSizePlan",
    "required_sample_size",
]

UNIFORM, TOP_K, SCORE_POWER = "uniform", "top_k", "score_power"
_KINDS = (UNIFORM, TOP_K, SCORE_POWER)
OVERLAP, BALANCE = "overlap", "balance"
_SCHEMES = (OVERLAP, BALANCE)
# Row sums of user weights and total probabilities are checked to this absolute tolerance.
_SUM_TOLERANCE = 1e-9


def _key_index(keys) -> pd.Index:
    """A pandas Index over normalised keys that keeps their NumPy dtype.

    pandas would otherwise convert object arrays of str to its Arrow string dtype and convert
    every lookup target again, which dominates the cost of repeated draws.
    """
    keys = as_key_array(keys)
    return pd.Index(keys, dtype=keys.dtype)


# --------------------------------------------------------------------------------------------
# Sampling distributions and system outputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingDistribution:
    """How a system's output is sampled: the distribution p_i over its items.

    Parameters
    ----------
    kind : {"uniform", "top_k", "score_power"}, default="uniform"
        ``"uniform"``: every item has probability 1/n. ``"top_k"``: uniform over the ``k`` items of
        highest score (ties broken by the key hash of :func:`prdist.ranking.rank_order`).
        ``"score_power"``: p(x) ∝ score(x) ** ``power``; scores must be non-negative. For any
        other function g of the score, pass g(score) as the scores with ``power=1``.
    k : int, optional
        Size of the top, >= 1; only (and required) for ``"top_k"``.
    power : float, optional
        Exponent a > 0; only for ``"score_power"`` (default 1).

    Examples
    --------
    >>> SamplingDistribution.top_k(2).probabilities([0.9, 0.1, 0.5], ["a", "b", "c"]).tolist()
    [0.5, 0.0, 0.5]
    >>> SamplingDistribution.score_power(2.0).probabilities([1.0, 3.0], ["a", "b"]).tolist()
    [0.1, 0.9]
    """

    kind: str = UNIFORM
    k: int | None = None
    power: float | None = None

    def __post_init__(self):
        owner = "SamplingDistribution"
        check_choice(self.kind, name="kind", owner=owner, choices=_KINDS)
        if self.kind == TOP_K:
            if self.k is None:
                raise ParameterError(
                    "The 'k' parameter of SamplingDistribution is required for kind='top_k'. "
                    "Use SamplingDistribution.top_k(k)."
                )
            object.__setattr__(self, "k", K.check(self.k, owner=owner))
        elif self.k is not None:
            raise ParameterError(
                f"The 'k' parameter of SamplingDistribution only applies to kind='top_k'. "
                f"Got k={self.k!r} with kind={self.kind!r}."
            )
        if self.kind == SCORE_POWER:
            power = 1.0 if self.power is None else self.power
            power = POWER.check(power, owner=owner)
            object.__setattr__(self, "power", power)
        elif self.power is not None:
            raise ParameterError(
                f"The 'power' parameter of SamplingDistribution only applies to "
                f"kind='score_power'. Got power={self.power!r} with kind={self.kind!r}."
            )

    @classmethod
    def uniform(cls) -> SamplingDistribution:
        """Uniform over the whole output."""
        return cls(UNIFORM)

    @classmethod
    def top_k(cls, k) -> SamplingDistribution:
        """Uniform over the ``k`` items of highest score."""
        return cls(TOP_K, k=k)

    @classmethod
    def score_power(cls, power=1.0) -> SamplingDistribution:
        """Proportional to score ** power."""
        return cls(SCORE_POWER, power=power)

    def probabilities(self, scores, keys) -> np.ndarray:
        """Return p(x) for every item of one system.

        Parameters
        ----------
        scores : array-like of float, shape (n,)
            Finite scores of the system's items.
        keys : array-like of int or str, shape (n,)
            Their unique keys (they break score ties for ``"top_k"``).

        Returns
        -------
        ndarray of float64, shape (n,)
            Non-negative probabilities summing to one.
        """
        owner = "SamplingDistribution.probabilities"
        s = np.asarray(scores, dtype=np.float64)
        k = as_key_array(keys)
        if s.ndim != 1 or s.shape != k.shape or s.size == 0:
            raise DataError(
                f"{owner} needs non-empty 1-d scores and keys of one length; got shapes "
                f"{s.shape} and {k.shape}."
            )
        if not np.isfinite(s).all():
            raise DataError(f"{owner}: scores must be finite; drop or repair NaN/infinite scores.")
        if self.kind == UNIFORM:
            return np.full(s.size, 1.0 / s.size)
        if self.kind == TOP_K:
            if self.k > s.size:
                raise ParameterError(
                    f"The 'k' parameter of SamplingDistribution must be at most the number of "
                    f"items ({s.size}). Got {self.k} instead."
                )
            p = np.zeros(s.size)
            p[rank_order(s, k)[: self.k]] = 1.0 / self.k
            return p
        if (s < 0).any():
            raise DataError(
                f"{owner}: kind='score_power' needs non-negative scores; found "
                f"{float(s.min())!r}. Shift or transform the scores first."
            )
        weight = s**self.power
        total = weight.sum()
        if not (np.isfinite(total) and total > 0):
            raise DataError(
                f"{owner}: score ** {self.power:g} sums to {total!r}; it must be finite and "
                "positive. Rescale the scores."
            )
        return weight / total


@dataclass(frozen=True, eq=False)
class SystemOutput:
    """One system's output X_i with its sampling distribution p_i.

    Items with probability zero (below the top k, or of score 0 under ``"score_power"``) are
    outside the support: they are never drawn and count for nothing in that system's precision
    or recall. Arrays are read-only.

    Parameters
    ----------
    name : str
        Unique, non-empty system name.
    keys : array-like of int or str, shape (n,)
        Unique item keys.
    probabilities : array-like of float, shape (n,)
        p_i over ``keys``: non-negative, summing to one (renormalised exactly).

    Examples
    --------
    >>> system = SystemOutput.from_scores("A", ["a", "b"], [0.2, 0.7])
    >>> system.probability_of(["b", "z"]).tolist()
    [0.5, 0.0]
    """

    name: str
    keys: np.ndarray
    probabilities: np.ndarray

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(f"A system name must be a non-empty str. Got {self.name!r} instead.")
        keys = as_key_array(self.keys)
        p = np.asarray(self.probabilities, dtype=np.float64)
        if keys.ndim != 1 or keys.shape != p.shape or keys.size == 0:
            raise DataError(
                f"System {self.name!r} needs non-empty 1-d keys and probabilities of one length; "
                f"got shapes {keys.shape} and {p.shape}."
            )
        index = _key_index(keys)
        if not index.is_unique:
            dup = index[index.duplicated()][0]
            raise DataError(
                f"System {self.name!r} lists key {dup!r} more than once; an item is one key. "
                "Deduplicate the output first (for example keep the highest score)."
            )
        total = p.sum()
        if not np.isfinite(p).all() or (p < 0).any() or abs(total - 1.0) > _SUM_TOLERANCE * p.size:
            raise DataError(
                f"The probabilities of system {self.name!r} must be finite, non-negative and sum "
                f"to 1; they sum to {total!r}. Build them with SamplingDistribution.probabilities."
            )
        p = p / total
        keys = keys.copy()
        keys.setflags(write=False)
        p.setflags(write=False)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "probabilities", p)
        self.__dict__["_index"] = index

    @classmethod
    def from_scores(cls, name, keys, scores, distribution=None) -> SystemOutput:
        """Build a system from its scored output and a :class:`SamplingDistribution` (uniform)."""
        distribution = SamplingDistribution() if distribution is None else distribution
        if not isinstance(distribution, SamplingDistribution):
            raise ParameterError(
                f"The 'distribution' parameter of SystemOutput.from_scores must be a "
                f"SamplingDistribution. Got {distribution!r} instead."
            )
        return cls(name, keys, distribution.probabilities(scores, keys))

    @property
    def support(self) -> np.ndarray:
        """Keys with positive probability: the items the system is evaluated on."""
        return self.keys[self.probabilities > 0]

    def probability_of(self, keys) -> np.ndarray:
        """Return p_i(x) for arbitrary keys: 0 for keys outside the output."""
        pos = self._index.get_indexer(as_key_array(keys))
        return np.where(pos >= 0, self.probabilities[pos], 0.0)


def _check_systems(systems, *, owner: str) -> tuple[SystemOutput, ...]:
    systems = tuple(systems)
    if not systems or not all(isinstance(s, SystemOutput) for s in systems):
        raise ParameterError(
            f"The 'systems' parameter of {owner} must be a non-empty sequence of SystemOutput."
        )
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ParameterError(f"System names passed to {owner} must be unique; {dup!r} repeats.")
    return systems


def _universe_summary(systems: tuple[SystemOutput, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Return the overlaps <p_i, p_j> (m, m) and the distinct support patterns (K, m)."""
    union = _key_index(np.concatenate([s.keys for s in systems])).unique()
    full = np.column_stack([s.probability_of(union) for s in systems])
    overlaps = full.T @ full
    # Unique rows of the membership matrix, as one byte string per row (much faster than
    # np.unique(axis=0), which sorts row by row).
    packed = np.packbits(full > 0, axis=1)
    rows = np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).ravel())
    patterns = np.unpackbits(rows.view(np.uint8).reshape(-1, packed.shape[1]), axis=1,
                             count=len(systems)).astype(bool)
    return overlaps, patterns[patterns.any(axis=1)]


# --------------------------------------------------------------------------------------------
# The joint sample
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class JointSample:
    """The draws of every system, on the union of the drawn items.

    Built by :func:`draw_joint_sample` or :meth:`from_draws`; labels are attached with
    :meth:`with_labels`. Arrays are read-only. U is the number of distinct drawn items, m the
    number of systems, K the number of distinct support patterns.

    Attributes
    ----------
    systems : tuple of str, length m
        System names, in column order.
    keys : ndarray, shape (U,)
        Distinct drawn keys.
    probabilities : ndarray of float64, shape (U, m)
        ``probabilities[x, i]`` = p_i(x), 0 when x is outside system i's support.
    counts : ndarray of int64, shape (U, m)
        ``counts[x, j]`` = how often system j drew x; column sums are the sample sizes n_j.
    labels : ndarray of float64, shape (U,)
        f(x) in {0, 1}, NaN while unknown.
    overlaps : ndarray of float64, shape (m, m)
        <p_i, p_j> = Σ_x p_i(x) p_j(x) over the full outputs (the default weights use it).
    support_patterns : ndarray of bool, shape (K, m)
        Every distinct set {j : p_j(x) > 0} over the full outputs; q_i > 0 wherever p_i > 0
        exactly when every pattern containing i holds a system of positive weight.
    """

    systems: tuple[str, ...]
    keys: np.ndarray
    probabilities: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    overlaps: np.ndarray
    support_patterns: np.ndarray

    def __post_init__(self):
        owner = "JointSample"
        systems = tuple(self.systems)
        m = len(systems)
        if m == 0 or len(set(systems)) != m:
            raise ParameterError(f"{owner} needs at least one system and unique system names.")
        keys = as_key_array(self.keys)
        u = keys.size
        p = np.asarray(self.probabilities, dtype=np.float64)
        c = np.asarray(self.counts)
        if c.dtype.kind not in "iu" or (c < 0).any():
            raise DataError(f"{owner} counts must be non-negative integers.")
        c = c.astype(np.int64, copy=False)
        labels = as_label_array(self.labels, owner=owner)
        overlaps = np.asarray(self.overlaps, dtype=np.float64)
        patterns = np.asarray(self.support_patterns, dtype=bool)
        if (
            keys.ndim != 1
            or p.shape != (u, m)
            or c.shape != (u, m)
            or labels.shape != (u,)
            or overlaps.shape != (m, m)
            or patterns.ndim != 2
            or patterns.shape[1] != m
        ):
            raise DataError(
                f"{owner} arrays disagree in shape: keys {keys.shape}, probabilities {p.shape}, "
                f"counts {c.shape}, labels {labels.shape}, overlaps {overlaps.shape}, "
                f"support_patterns {patterns.shape} for {m} systems."
            )
        if not _key_index(keys).is_unique:
            raise DataError(f"{owner} keys must be unique: one row per drawn item.")
        if not (np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()):
            raise DataError(f"{owner} probabilities must lie in [0, 1].")
        if ((c > 0) & (p <= 0)).any():
            x, j = np.argwhere((c > 0) & (p <= 0))[0]
            raise DataError(
                f"System {systems[j]!r} drew key {keys[x]!r}, which is outside its support "
                "(probability 0). Draw only from the system's own distribution."
            )
        if not (np.isfinite(overlaps).all() and (overlaps >= 0).all()):
            raise DataError(f"{owner} overlaps must be finite and non-negative.")
        for name, arr in (("keys", keys), ("probabilities", p), ("counts", c), ("labels", labels),
                          ("overlaps", overlaps), ("support_patterns", patterns)):
            arr = arr.copy()
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "systems", systems)

    @classmethod
    def from_draws(cls, systems, draws) -> JointSample:
        """Build a joint sample from explicit draws (keys, with repeats) of every system.

        Parameters
        ----------
        systems : sequence of SystemOutput, length m
        draws : sequence of array-like of keys, length m
            ``draws[j]`` holds system j's n_j i.i.d. draws from p_j (possibly none).

        Examples
        --------
        >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
        >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
        >>> sample = JointSample.from_draws([a, b], [["x", "y", "x"], ["z"]])
        >>> sample.keys.tolist(), sample.sizes.tolist()
        (['x', 'y', 'z'], [3, 1])
        >>> sample.probabilities.tolist()
        [[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]]
        """
        owner = "JointSample.from_draws"
        systems = _check_systems(systems, owner=owner)
        draws = list(draws)
        if len(draws) != len(systems):
            raise ParameterError(
                f"The 'draws' parameter of {owner} must hold one array per system "
                f"({len(systems)}). Got {len(draws)} instead."
            )
        # An empty draw has no key type of its own (np.asarray([]) is float): take the system's.
        draws = [
            as_key_array(d).ravel() if np.size(d) else s.keys[:0]
            for s, d in zip(systems, draws)
        ]
        union = _key_index(np.concatenate(draws)).unique()
        counts = np.column_stack(
            [np.bincount(union.get_indexer(d), minlength=union.size) for d in draws]
        )
        probabilities = np.column_stack([s.probability_of(union) for s in systems])
        overlaps, patterns = _universe_summary(systems)
        return cls(
            systems=tuple(s.name for s in systems),
            keys=np.asarray(union),
            probabilities=probabilities,
            counts=counts,
            labels=np.full(union.size, np.nan),
            overlaps=overlaps,
            support_patterns=patterns,
        )

    @property
    def sizes(self) -> np.ndarray:
        """n_j: the number of draws of every system, shape (m,)."""
        return self.counts.sum(axis=0)

    def with_labels(self, keys, labels) -> JointSample:
        """Return a copy with labels looked up by key (a label store's ``key``/``label`` columns).

        Keys not in the sample are ignored, NaN labels leave an item unknown; a key labeled twice
        with different values, or differently from a label the sample already has, is an error.
        """
        owner = "JointSample.with_labels"
        store_keys = as_key_array(keys)
        values = as_label_array(labels, owner=owner)
        if store_keys.shape != values.shape:
            raise DataError(
                f"{owner} needs keys and labels of one length; got {store_keys.shape} and "
                f"{values.shape}."
            )
        # Only labels of drawn items matter; a label store can be far larger than the sample.
        relevant = ~np.isnan(values) & _key_index(store_keys).isin(self.keys)
        store = pd.Series(values[relevant], index=_key_index(store_keys[relevant]))
        spread = store.groupby(level=0).agg(["min", "max"])
        conflicting = spread.index[spread["min"] != spread["max"]]
        if conflicting.size:
            raise DataError(
                f"{owner}: key {conflicting[0]!r} is labeled both 0 and 1. Resolve the conflict "
                "in the label store first."
            )
        looked_up = spread["max"].reindex(_key_index(self.keys)).to_numpy()
        clash = ~np.isnan(looked_up) & ~np.isnan(self.labels) & (looked_up != self.labels)
        if clash.any():
            raise DataError(
                f"{owner}: key {self.keys[clash][0]!r} already has label "
                f"{self.labels[clash][0]:g} and the new labels say otherwise."
            )
        merged = np.where(np.isnan(self.labels), looked_up, self.labels)
        return dataclasses.replace(self, labels=merged)  # validated again, like any JointSample


def _spawn_generators(seed, count: int, *, owner: str) -> list[np.random.Generator]:
    if isinstance(seed, np.random.SeedSequence):
        sequence = seed
    elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ParameterError(
            f"The 'seed' parameter of {owner} must be a non-negative int or a "
            f"numpy.random.SeedSequence. Got {seed!r} instead."
        )
    else:
        sequence = np.random.SeedSequence(int(seed))
    return [np.random.default_rng(child) for child in sequence.spawn(count)]


def draw_joint_sample(systems, sizes, *, seed) -> JointSample:
    """Draw n_j items i.i.d. from every system's distribution p_j.

    Every system draws from its own child of ``SeedSequence(seed)``, so adding a system (a new
    release) at the end leaves the earlier systems' draws unchanged.

    Parameters
    ----------
    systems : sequence of SystemOutput, length m
    sizes : int or sequence of int, length m
        Draws per system (one int: the same for all), >= 0.
    seed : int or numpy.random.SeedSequence

    Returns
    -------
    JointSample
        Unlabeled; attach labels with :meth:`JointSample.with_labels`.

    Examples
    --------
    >>> a = SystemOutput.from_scores("A", list("abcd"), [4.0, 3.0, 2.0, 1.0])
    >>> draw_joint_sample([a], 5, seed=0).sizes.tolist()
    [5]
    """
    owner = "draw_joint_sample"
    systems = _check_systems(systems, owner=owner)
    if isinstance(sizes, numbers.Integral) and not isinstance(sizes, bool):
        sizes = [sizes] * len(systems)
    sizes = list(sizes)
    if len(sizes) != len(systems):
        raise ParameterError(
            f"The 'sizes' parameter of {owner} must give one size per system ({len(systems)}). "
            f"Got {len(sizes)} instead."
        )
    sizes = [check_int(n, name="sizes", owner=owner, low=0) for n in sizes]
    generators = _spawn_generators(seed, len(systems), owner=owner)
    draws = [
        s.keys[rng.choice(s.keys.size, size=n, p=s.probabilities)]
        for s, n, rng in zip(systems, sizes, generators)
    ]
    return JointSample.from_draws(systems, draws)


def missing_labels(sample: JointSample) -> np.ndarray:
    """Return the drawn keys that still need a label (the annotation task), in sample order.

    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a], [["x", "y"]]).with_labels(["x"], [1])
    >>> missing_labels(sample).tolist()
    ['y']
    """
    _check_sample(sample, owner="missing_labels")
    return sample.keys[np.isnan(sample.labels)]


def _check_sample(sample, *, owner: str) -> None:
    if not isinstance(sample, JointSample):
        raise ParameterError(
            f"The 'sample' argument of {owner} must be a JointSample. "
            f"Got {type(sample).__name__} instead."
        )


def _require_labels(sample: JointSample, *, owner: str) -> np.ndarray:
    """Return the labels as 0/1 floats, raising AwaitingLabels while any drawn item is unknown."""
    unknown = int(np.isnan(sample.labels).sum())
    if unknown:
        raise AwaitingLabels(
            f"{owner}: {unknown} drawn item(s) have no label yet. Export missing_labels(sample) "
            "as an annotation task and attach the answers with sample.with_labels(keys, labels).",
            missing=unknown,
        )
    return sample.labels


# --------------------------------------------------------------------------------------------
# Mixture weights
# --------------------------------------------------------------------------------------------


def mixture_weights(sample: JointSample, scheme: str = OVERLAP) -> np.ndarray:
    """Return the default mixture weights w_ij, shape (m, m), rows summing to one.

    ``"overlap"`` (default; the authors' heuristic): w_ij ∝ n_j <p_i, p_j>.
    ``"balance"`` (Veach's balance heuristic): w_ij ∝ n_j.

    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a, b], [["x", "y"], ["z"] * 6])
    >>> mixture_weights(sample).round(3).tolist()
    [[0.4, 0.6], [0.143, 0.857]]
    >>> mixture_weights(sample, "balance").tolist()
    [[0.25, 0.75], [0.25, 0.75]]
    """
    owner = "mixture_weights"
    check_choice(scheme, name="scheme", owner=owner, choices=_SCHEMES)
    n = sample.sizes.astype(np.float64)
    raw = n * sample.overlaps if scheme == OVERLAP else np.tile(n, (n.size, 1))
    totals = raw.sum(axis=1)
    if (totals <= 0).any():
        i = int(np.flatnonzero(totals <= 0)[0])
        raise DataError(
            f"{owner}: no system with draws shares any item with system "
            f"{sample.systems[i]!r}, so its precision cannot be estimated. Draw from it."
        )
    return raw / totals[:, None]


def _resolve_weights(sample: JointSample, weights, *, owner: str) -> np.ndarray:
    """Return validated (m, m) weights: a scheme name or a user matrix."""
    m = len(sample.systems)
    if isinstance(weights, str):
        WEIGHTS.check(weights, owner=owner)
        w = mixture_weights(sample, weights)
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            w = None
        if w is None or w.shape != (m, m) or not np.isfinite(w).all() or (w < 0).any():
            raise ParameterError(
                f"The 'weights' parameter of {owner} must be 'overlap', 'balance' or a finite, "
                f"non-negative ({m}, {m}) matrix. Got {weights!r} instead."
            )
        bad_rows = np.flatnonzero(np.abs(w.sum(axis=1) - 1.0) > _SUM_TOLERANCE)
        if bad_rows.size:
            i = int(bad_rows[0])
            raise ParameterError(
                f"The 'weights' parameter of {owner} must have rows summing to 1; the row of "
                f"system {sample.systems[i]!r} sums to {w[i].sum()!r}."
            )
    empty = sample.sizes == 0
    if (w[:, empty] > 0).any():
        i, j = np.argwhere(w[:, empty] > 0)[0]
        raise ParameterError(
            f"The 'weights' parameter of {owner} gives system "
            f"{sample.systems[int(np.flatnonzero(empty)[j])]!r} weight in the mixture of "
            f"{sample.systems[i]!r}, but it has no draws. Give systems without draws weight 0."
        )
    # q_i > 0 wherever p_i > 0 <=> every support pattern containing i meets a weighted system.
    patterns = sample.support_patterns
    reach = patterns.astype(np.float64) @ w.T  # (K, m): q_i > 0 on items of that pattern
    uncovered = patterns & (reach <= 0)
    if uncovered.any():
        k, i = np.argwhere(uncovered)[0]
        holders = [sample.systems[j] for j in np.flatnonzero(patterns[k])]
        raise ParameterError(
            f"The mixture q of system {sample.systems[i]!r} is zero on items that only "
            f"{holders} output, so its estimate would be biased. Give one of these systems "
            "positive weight (and draws)."
        )
    return w


# --------------------------------------------------------------------------------------------
# Precision
# --------------------------------------------------------------------------------------------


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def _system_means_and_variances(sample: JointSample, values: np.ndarray, needed: np.ndarray,
                                *, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-system mean and unbiased variance of ``values`` (U, k) over each system's draws.

    Returns arrays (m, k); rows of systems without draws are 0. ``needed[j]`` says whether system
    j's variance enters a result: it then needs at least two draws.
    """
    n = sample.sizes
    short = needed & (n < 2)
    if short.any():
        j = int(np.flatnonzero(short)[0])
        raise DataError(
            f"{owner}: system {sample.systems[j]!r} has {int(n[j])} draw(s) but carries weight; "
            "its variance needs at least 2. Draw more from it or give it weight 0."
        )
    safe_n = np.maximum(n, 1)[:, None]
    means = (sample.counts.T @ values) / safe_n
    variances = np.zeros_like(means)
    for j in np.flatnonzero(n >= 2):
        # Centred sums: the raw-moment shortcut loses digits when values are large weights.
        variances[j] = sample.counts[:, j] @ (values - means[j]) ** 2 / (n[j] - 1)
    return means, variances


def _clipped(values: np.ndarray) -> np.ndarray:
    return np.clip(values, 0.0, 1.0)


def _normal_interval(estimate: str, variance: str) -> tuple[property, ...]:
    """The properties se, half width, low and high end of the interval estimate ± z·se clipped to
    [0, 1], for the attributes named ``estimate`` and ``variance`` of a class with ``confidence``."""

    def se(self) -> np.ndarray:
        return np.sqrt(getattr(self, variance))

    def half_width(self) -> np.ndarray:
        return _z(self.confidence) * se(self)

    def ci_low(self) -> np.ndarray:
        return _clipped(getattr(self, estimate) - half_width(self))

    def ci_high(self) -> np.ndarray:
        return _clipped(getattr(self, estimate) + half_width(self))

    return (property(se), property(half_width, doc="z·se: half the width of the (unclipped) interval."),
            property(ci_low), property(ci_high))


@dataclass(frozen=True, eq=False)
class PrecisionEstimate:
    """Joint and simple precision estimates of every system, with normal-approximation intervals.

    ``precision``/``variance`` are the joint estimator and its unbiased variance estimate;
    ``simple_*`` the mean label of the system's own draws (NaN without draws) and its unbiased
    variance (NaN with fewer than two draws). Intervals are π̂ ± z·se clipped to [0, 1].
    """

    systems: tuple[str, ...]
    precision: np.ndarray
    variance: np.ndarray
    simple_precision: np.ndarray
    simple_variance: np.ndarray
    n_samples: np.ndarray
    weights: np.ndarray
    confidence: float

    se, half_width, ci_low, ci_high = _normal_interval("precision", "variance")
    simple_se, simple_half_width, simple_ci_low, simple_ci_high = _normal_interval(
        "simple_precision", "simple_variance")

    def to_frame(self) -> pd.DataFrame:
        """One row per system; the columns of compare.parquet that concern precision, plus the
        simple estimator's."""
        return pd.DataFrame(
            {
                "system": list(self.systems),
                "precision": self.precision,
                "precision_se": self.se,
                "precision_ci_low": self.ci_low,
                "precision_ci_high": self.ci_high,
                "n_samples": self.n_samples,
                "simple_precision": self.simple_precision,
                "simple_precision_se": self.simple_se,
                "simple_ci_low": self.simple_ci_low,
                "simple_ci_high": self.simple_ci_high,
            }
        )


def estimate_precision(sample: JointSample, *, weights=OVERLAP, confidence=0.95) -> PrecisionEstimate:
    """Estimate every system's precision jointly from all systems' labeled draws.

    π̂_i = Σ_j (w_ij / n_j) Σ_{x ∈ X̂_j} p_i(x) f(x) / q_i(x) with q_i = Σ_j w_ij p_j
    (Chaganty et al. 2017, appendix B.1), unbiased for π_i = E_{x~p_i}[f(x)]; its variance
    (Theorem 1) Σ_j (w_ij² / n_j) Var_{p_j}[p_i f / q_i] is estimated without bias from the
    per-system sample variances (ddof = 1).

    Parameters
    ----------
    sample : JointSample
        Every drawn item must be labeled (else :class:`~prdist.errors.AwaitingLabels`).
    weights : {"overlap", "balance"} or array-like of shape (m, m), default="overlap"
        Mixture weights; see :func:`mixture_weights`. A matrix must be non-negative with rows
        summing to one, give no weight to systems without draws, and keep q_i > 0 wherever
        p_i > 0 (an error names the system otherwise).
    confidence : float, default=0.95
        Level of the normal-approximation intervals, in (0, 1).

    Returns
    -------
    PrecisionEstimate

    Examples
    --------
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a, b], [["x", "y", "y", "x"], ["z", "y", "z"]])
    >>> sample = sample.with_labels(["x", "y", "z"], [1, 0, 1])
    >>> est = estimate_precision(sample)
    >>> est.precision.round(4).tolist(), est.simple_precision.round(4).tolist()
    ([0.5, 0.6667], [0.5, 0.6667])
    """
    owner = "estimate_precision"
    _check_sample(sample, owner=owner)
    confidence = check_confidence(confidence, owner=owner)
    w = _resolve_weights(sample, weights, owner=owner)
    f = _require_labels(sample, owner=owner)
    p = sample.probabilities
    q = p @ w.T  # q[x, i] = Σ_j w_ij p_j(x)
    inside = p > 0
    # The weight check guarantees q > 0 wherever p > 0 on the full outputs, hence on the draws.
    h = np.zeros_like(p)
    h[inside] = (p * f[:, None])[inside] / q[inside]
    means, variances = _system_means_and_variances(sample, h, (w > 0).any(axis=0), owner=owner)
    n = sample.sizes
    safe_n = np.maximum(n, 1)
    precision = (w * means.T).sum(axis=1)
    variance = (w**2 / safe_n * variances.T).sum(axis=1)

    own_means, own_vars = _system_means_and_variances(sample, f[:, None], np.zeros(n.size, bool),
                                                      owner=owner)
    simple_precision = np.where(n > 0, own_means[:, 0], np.nan)
    simple_variance = np.where(n > 1, own_vars[:, 0] / safe_n, np.nan)
    return PrecisionEstimate(
        systems=sample.systems,
        precision=precision,
        variance=variance,
        simple_precision=simple_precision,
        simple_variance=simple_variance,
        n_samples=n,
        weights=w,
        confidence=confidence,
    )


# --------------------------------------------------------------------------------------------
# Recall
# --------------------------------------------------------------------------------------------


def pool_membership(keys, systems) -> np.ndarray:
    """Return, for every key, whether it is in the pool: the support of some system.

    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> pool_membership(["y", "q"], [a]).tolist()
    [True, False]
    """
    systems = _check_systems(systems, owner="pool_membership")
    keys = as_key_array(keys)
    return np.logical_or.reduce([s.probability_of(keys) > 0 for s in systems])


@dataclass(frozen=True, eq=False)
class RecallEstimate:
    """Recall r̂_i = θ̂ ν̂_i of every system with its plug-in variance (Lemma 1).

    ``pooled_recall`` ν̂_i: the share of the pool's correct items that system i outputs
    (self-normalised importance sampling; delta-method variance). ``pool_recall`` θ̂: the share of
    the exhaustively found correct items that the pool holds (binomial variance, ddof = 1).
    """

    systems: tuple[str, ...]
    recall: np.ndarray
    variance: np.ndarray
    pooled_recall: np.ndarray
    pooled_recall_variance: np.ndarray
    pool_recall: float
    pool_recall_variance: float
    n_exhaustive: int
    pool_weights: np.ndarray
    confidence: float

    se, half_width, ci_low, ci_high = _normal_interval("recall", "variance")

    def to_frame(self) -> pd.DataFrame:
        """One row per system: system, recall, recall_se, recall_ci_low, recall_ci_high,
        pooled_recall, pooled_recall_se."""
        return pd.DataFrame(
            {
                "system": list(self.systems),
                "recall": self.recall,
                "recall_se": self.se,
                "recall_ci_low": self.ci_low,
                "recall_ci_high": self.ci_high,
                "pooled_recall": self.pooled_recall,
                "pooled_recall_se": np.sqrt(self.pooled_recall_variance),
            }
        )


def estimate_recall(sample: JointSample, *, exhaustive_in_pool, weights=BALANCE,
                    confidence=0.95) -> RecallEstimate:
    """Estimate every system's recall as pool recall times pooled recall (appendix B.2).

    ν̂_i = Σ_j (w_j/n_j) Σ_{x ∈ Ŷ_j} g_i(x)/q(x) / Σ_j (w_j/n_j) Σ_{x ∈ Ŷ_j} 1/q(x), with
    q = Σ_j w_j p_j one mixture for the whole pool, Ŷ_j the correct draws of system j and
    g_i(x) = 1[p_i(x) > 0]: every correct pool item counts once (p_0 uniform).
    θ̂ = mean of ``exhaustive_in_pool``; r̂_i = θ̂ ν̂_i with
    Var r̂_i = Var θ̂ Var ν̂_i + θ̂² Var ν̂_i + ν̂_i² Var θ̂ (Lemma 1, plug-in; Theorem 3 of the
    appendix drops the squares). ν̂_i and r̂_i are consistent, not unbiased (a ratio).

    Parameters
    ----------
    sample : JointSample
        Every drawn item must be labeled.
    exhaustive_in_pool : array-like of bool, shape (n_0,)
        For each correct item of an exhaustive sample Ŷ_0 (say, every correct fact of some
        sentences, found whether or not a system output it), whether the pool holds it
        (:func:`pool_membership`). n_0 >= 2.
    weights : "balance" or array-like of shape (m,), default="balance"
        Pool mixture weights w_j: ``"balance"`` is w_j ∝ n_j; a vector must be non-negative, sum
        to one, give no weight to systems without draws and keep q > 0 on the whole pool.
    confidence : float, default=0.95

    Returns
    -------
    RecallEstimate
        Each system's recall, its two factors and their variances, with normal intervals.

    Examples
    --------
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a, b], [["x", "y", "y", "x"], ["z", "y", "z"]])
    >>> sample = sample.with_labels(["x", "y", "z"], [1, 0, 1])
    >>> est = estimate_recall(sample, exhaustive_in_pool=[True, True, True, False])
    >>> est.pooled_recall.round(4).tolist(), est.pool_recall
    ([0.4286, 0.5714], 0.75)
    """
    owner = "estimate_recall"
    _check_sample(sample, owner=owner)
    confidence = check_confidence(confidence, owner=owner)
    in_pool = np.asarray(exhaustive_in_pool)
    if in_pool.ndim != 1 or in_pool.size < 2 or in_pool.dtype != bool:
        raise DataError(
            f"The 'exhaustive_in_pool' argument of {owner} must be a 1-d boolean array of at "
            f"least 2 items (one per exhaustively found correct item). Got dtype {in_pool.dtype} "
            f"and shape {in_pool.shape}."
        )
    m = len(sample.systems)
    n = sample.sizes
    if n.sum() == 0:
        raise DataError(f"{owner}: the sample has no draws. Draw from the systems first.")
    if isinstance(weights, str):
        check_choice(weights, name="weights", owner=owner, choices=(BALANCE,))
        w = n / n.sum()
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            w = np.full(m + 1, np.nan)  # fails the check below with the one message
        valid = w.shape == (m,) and np.isfinite(w).all() and (w >= 0).all()
        if not valid or abs(w.sum() - 1) > _SUM_TOLERANCE:
            raise ParameterError(
                f"The 'weights' parameter of {owner} must be 'balance' or {m} non-negative "
                f"weights summing to 1. Got {weights!r} instead."
            )
    # One pool mixture: reuse the matrix check with every row equal to w.
    w = _resolve_weights(sample, np.tile(w, (m, 1)), owner=owner)[0]
    f = _require_labels(sample, owner=owner)
    # The weight check keeps q > 0 on the whole pool, hence on every drawn item.
    b = f / (sample.probabilities @ w)
    a = b[:, None] * (sample.probabilities > 0)
    # Numerator (m columns) and denominator (last column) share the per-system draws.
    values = np.column_stack([a, b])
    means, _ = _system_means_and_variances(sample, values, np.zeros(m, bool), owner=owner)
    totals = w @ means
    denominator = totals[-1]
    if denominator <= 0:
        raise DataError(
            f"{owner}: no correct item among the draws, so the pool's correct items cannot be "
            "weighed. Draw and label more items."
        )
    nu = totals[:-1] / denominator
    # Delta method: ν̂ - ν ≈ Σ_j (w_j/n_j) Σ (a - ν b) / B.
    residual = a - nu * b[:, None]
    _, res_vars = _system_means_and_variances(sample, residual, w > 0, owner=owner)
    nu_var = (w**2 / np.maximum(n, 1)) @ res_vars / denominator**2

    n0 = in_pool.size
    theta = float(in_pool.mean())
    theta_var = theta * (1.0 - theta) / (n0 - 1)
    recall = theta * nu
    variance = theta_var * nu_var + theta**2 * nu_var + nu**2 * theta_var
    return RecallEstimate(
        systems=sample.systems,
        recall=recall,
        variance=variance,
        pooled_recall=nu,
        pooled_recall_variance=nu_var,
        pool_recall=theta,
        pool_recall_variance=theta_var,
        n_exhaustive=n0,
        pool_weights=w,
        confidence=confidence,
    )

# --------------------------------------------------------------------------------------------
# Sample size for a new system (appendix B.4)
# --------------------------------------------------------------------------------------------

SECOND_MOMENT, WORST_CASE = "second-moment", "worst-case"
_BOUNDS = (SECOND_MOMENT, WORST_CASE)


def _worst_case_variance(p: np.ndarray, g: np.ndarray) -> float:
    """max over labels f ∈ [0, 1]^X of Var_{x~p}[g(x) f(x)], for g >= 0.

    The objective Σ p g² f − (Σ p g f)² is concave in f; at its maximum f(x) = 1 where g(x)
    exceeds 2·Σ p g f, 0 below, and only items at that threshold (equal g, so interchangeable) are
    fractional. So the maximum is over "the k items of largest g, plus a fraction α of the next",
    and for each k the best α solves a concave quadratic. It bounds every 0/1 labeling's variance
    and exceeds the best one by at most max_x p(x)² g(x)² / 4 (one fractional item).
    """
    order = np.argsort(-g, kind="stable")
    a = p[order] * g[order]  # p g
    b = a * g[order]  # p g²
    first = np.concatenate(([0.0], np.cumsum(a)[:-1]))  # Σ p g over the k items before
    second = np.concatenate(([0.0], np.cumsum(b)[:-1]))
    alpha = np.zeros_like(a)
    positive = a > 0
    # Best fraction of the next item: the vertex (g - 2 Σ p g) / (2 p g) of the quadratic, clipped;
    # a ratio that overflows for a tiny p g just clips to 1.
    with np.errstate(over="ignore", divide="ignore"):
        vertex = (g[order][positive] - 2 * first[positive]) / (2 * a[positive])
    alpha[positive] = np.clip(vertex, 0.0, 1.0)
    value = second + alpha * b - (first + alpha * a) ** 2
    return float(max(0.0, value.max(initial=0.0)))


@dataclass(frozen=True)
class SampleSizePlan:
    """How many draws a new system needs.

    ``size`` draws bring the conservative half-width ``half_width`` (= z·sqrt(``variance``)) to
    the target; ``expected_new_labels`` is the expected number of distinct drawn items without a
    label yet: the annotation cost.
    """

    size: int
    variance: float
    half_width: float
    expected_new_labels: float
    confidence: float


def _smallest_size(variance, target: float, max_size: int, *, too_few: str) -> int:
    """The least size in [0, max_size] whose ``variance(size)`` is at most ``target``.

    ``variance`` falls with the size: doubling finds a bracket, bisection the least size in it.
    ``too_few``: the message when even ``max_size`` is not enough.

    >>> _smallest_size(lambda n: 100 / (n + 1), 1.0, 1000, too_few="")
    99
    """
    if variance(0) <= target:
        return 0
    low, high = 0, 1  # invariant: variance(low) > target
    while variance(high) > target:
        if high >= max_size:
            raise ParameterError(too_few)
        low, high = high, min(2 * high, max_size)
    while high - low > 1:
        mid = (low + high) // 2
        if variance(mid) <= target:
            high = mid
        else:
            low = mid
    return high


def required_sample_size(sample: JointSample, systems, new_system: SystemOutput, *, half_width,
                         confidence=0.95, weights=OVERLAP, bound=SECOND_MOMENT,
                         draw_from: SystemOutput | None = None, labeled_keys=None,
                         max_size=10**9) -> SampleSizePlan:
    """Return the fewest draws that evaluate a new system within a target interval half-width.

    Appendix B.4: with the draws of the existing systems fixed and labeled, the variance of the
    new system's joint estimate π̂_m is bounded by

        V(n) = Σ_j (w_mj² / n_j) s²_j[p_m f / q_m] + (w_mr² / n) B_r(n),

    the first terms estimated from the existing draws (unbiased, ddof = 1), the last bounding the
    term of the n new draws, whose labels are unknown. r is the system they come from (the new
    system itself by default) and the weights follow ``weights`` with n_r = n. The smallest n with
    z·sqrt(V(n)) <= ``half_width`` is found by doubling and bisection. V decreases in n in the
    situations the paper considers; when the existing draws already cover the new output densely
    it can rise at small n, and the returned n then meets the target but a smaller one may too.

    Parameters
    ----------
    sample : JointSample
        Labeled draws of the existing systems.
    systems : sequence of SystemOutput
        The existing systems, in ``sample.systems`` order (their full outputs give p_j on the
        new output).
    new_system : SystemOutput
        The system (or release) to evaluate; its name must be new.
    half_width : float
        Target half-width of the normal-approximation interval, > 0.
    confidence : float, default=0.95
    weights : {"overlap", "balance"}, default="overlap"
    bound : {"second-moment", "worst-case"}, default="second-moment"
        B_r(n) for the unknown labels. ``"second-moment"`` is the paper's
        E_{p_r}[(p_m / q_m)²] (every label 1); ``"worst-case"`` is the largest variance
        Var_{p_r}[p_m f / q_m] any labels f ∈ [0, 1] can give — still conservative, and up to
        four times smaller (the variance of a 0/1 label is at most 1/4).
    draw_from : SystemOutput, optional
        Draw from this distribution instead of the new system's own: for a release, the items it
        adds to the previous one (uniform over the difference), so shared items keep their labels.
        Its name must be new too.
    labeled_keys : array-like, optional
        Further keys that already have labels (say, the whole label store), so that draws of them
        cost nothing in ``expected_new_labels``.
    max_size : int, default=10**9
        Give up beyond this many draws.

    Returns
    -------
    SampleSizePlan

    Examples
    --------
    >>> new = SystemOutput.from_scores("new", [f"k{i}" for i in range(1000)], np.ones(1000))
    >>> old = SystemOutput.from_scores("old", ["other"], [1.0])
    >>> sample = JointSample.from_draws([old], [["other", "other"]]).with_labels(["other"], [1])
    >>> required_sample_size(sample, [old], new, half_width=0.1).size  # 1.96² / 0.1²
    385
    >>> required_sample_size(sample, [old], new, half_width=0.1, bound="worst-case").size
    97
    """
    owner = "required_sample_size"
    _check_sample(sample, owner=owner)
    systems = _check_systems(systems, owner=owner)
    if tuple(s.name for s in systems) != sample.systems:
        raise ParameterError(
            f"The 'systems' parameter of {owner} must be the sample's systems in order "
            f"{list(sample.systems)}. Got {[s.name for s in systems]} instead."
        )
    draw_from = new_system if draw_from is None else draw_from
    for label, system in (("new_system", new_system), ("draw_from", draw_from)):
        if not isinstance(system, SystemOutput) or system.name in sample.systems:
            raise ParameterError(
                f"The {label!r} parameter of {owner} must be a SystemOutput whose name is not "
                f"already in the sample {list(sample.systems)}."
            )
    half_width = check_float(half_width, name="half_width", owner=owner, low=0.0, low_open=True)
    confidence = check_confidence(confidence, owner=owner)
    WEIGHTS.check(weights, owner=owner)
    check_choice(bound, name="bound", owner=owner, choices=_BOUNDS)
    max_size = check_int(max_size, name="max_size", owner=owner, low=1)
    f = _require_labels(sample, owner=owner)

    # Everything lives on the union of the new output and the sampler's support.
    universe = _key_index(np.concatenate([new_system.support, draw_from.support])).unique()
    universe = np.asarray(universe)
    p_new = new_system.probability_of(universe)
    p_r = draw_from.probability_of(universe)
    old_on_universe = np.column_stack([s.probability_of(universe) for s in systems])
    p_new_drawn = new_system.probability_of(sample.keys)
    p_r_drawn = draw_from.probability_of(sample.keys)
    n = sample.sizes.astype(np.float64)
    if weights == OVERLAP:
        # w_mj ∝ n_j <p_m, p_j>; the new draws' system r gets n <p_m, p_r>.
        scale_old = p_new @ old_on_universe
        scale_r = float(p_new @ p_r)
    else:
        scale_old = np.ones(n.size)
        scale_r = 1.0
    # q_m ∝ D_n = Σ_j n_j c_j p_j + n c_r p_r; the normalising Σ cancels in V.
    base = old_on_universe @ (n * scale_old)
    base_drawn = sample.probabilities @ (n * scale_old)
    unreachable = (p_new > 0) & (base <= 0) & (p_r <= 0)
    if unreachable.any():
        raise ParameterError(
            f"{owner}: item {universe[unreachable][0]!r} of {new_system.name!r} is in no sampled "
            f"system and not in the support of {draw_from.name!r}, so no number of draws can "
            f"estimate the precision of {new_system.name!r}. Draw from a distribution covering it."
        )
    # (w_mj² / n_j) s²_j[p_m f / q_m] = n_j c_j² s²_j[p_m f / D_n] once the Σ cancels.
    old_coefficients = n * scale_old**2
    hit = p_new_drawn > 0
    in_r = p_r > 0

    def variance(size: int) -> float:
        d = base + size * scale_r * p_r
        if ((p_new > 0) & (d <= 0)).any():
            return math.inf
        d_drawn = base_drawn + size * scale_r * p_r_drawn
        h = np.zeros(d_drawn.size)
        h[hit] = p_new_drawn[hit] * f[hit] / d_drawn[hit]
        _, spreads = _system_means_and_variances(sample, h[:, None], old_coefficients > 0,
                                                 owner=owner)
        old = float(old_coefficients @ spreads[:, 0])
        if size == 0:
            return old
        g = p_new[in_r] / d[in_r]
        if bound == SECOND_MOMENT:
            spread = float(p_r[in_r] @ g**2)
        else:
            spread = _worst_case_variance(p_r[in_r], g)
        return old + size * scale_r**2 * spread

    size = _smallest_size(variance, (half_width / _z(confidence)) ** 2, max_size, too_few=(
        f"{owner}: even {max_size} draws leave the conservative half-width of "
        f"{new_system.name!r} above {half_width:g}. Raise 'max_size' or the target."
    ))  # fmt: skip
    v = variance(size)

    known = _key_index(sample.keys[~np.isnan(sample.labels)])
    if labeled_keys is not None:
        known = known.append(_key_index(labeled_keys))
    p_fresh = p_r[in_r & ~_key_index(universe).isin(known)]
    # P(item drawn at least once in n draws) = 1 - (1 - p)^n, evaluated without cancellation.
    expected = 0.0
    if size:
        expected = float(-np.expm1(size * np.log1p(-np.minimum(p_fresh, 1 - 1e-16))).sum())
    return SampleSizePlan(
        size=int(size),
        variance=float(v),
        half_width=float(_z(confidence) * math.sqrt(v)),
        expected_new_labels=expected,
        confidence=confidence,
    )
