"""What each system outputs and how it is sampled: SamplingDistribution and SystemOutput."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prdist._validation import check_choice
from prdist.errors import DataError, ParameterError
from prdist.params import K, POWER
from prdist.ranking import as_key_array, rank_order

UNIFORM, TOP_K, SCORE_POWER = "uniform", "top_k", "score_power"
_KINDS = (UNIFORM, TOP_K, SCORE_POWER)
# Row sums of user weights and total probabilities are checked to this absolute tolerance.
_SUM_TOLERANCE = 1e-9


def _key_index(keys) -> pd.Index:
    """A pandas Index over normalised keys that keeps their NumPy dtype.

    pandas would otherwise convert object arrays of str to its Arrow string dtype and convert
    every lookup target again, which dominates the cost of repeated draws.
    """
    keys = as_key_array(keys)
    return pd.Index(keys, dtype=keys.dtype)


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
