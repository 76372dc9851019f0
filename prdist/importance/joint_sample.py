"""The joint sample: every system's draws on the union of the drawn items, and their labels."""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from prdist._validation import as_label_array, check_int
from prdist.errors import AwaitingLabels, DataError, ParameterError
from prdist.ranking import as_key_array
from prdist.importance.systems import _check_systems, _key_index, _universe_summary


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
        >>> from prdist.importance import SystemOutput
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
    >>> from prdist.importance import SystemOutput
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

    >>> from prdist.importance import SystemOutput
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
