"""The parameters of a comparison and the systems it compares (runs once, in the user's session).

See :mod:`prdist.dataflow.compare` for the steps; this module holds what decides a comparison's
numbers (:class:`CompareParams`, hence its run id), the opened systems and the split of the
budget over them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from prdist import params as P
from prdist._validation import check_confidence
from prdist.errors import DataError, ParameterError
from prdist.importance import SamplingDistribution
from prdist.dataflow.io.parquet import Resource, open_resource

__all__ = ["ALLOCATIONS", "CompareParams", "System", "allocate_budget", "check_system_name", "open_systems"]

ALLOCATIONS = P.ALLOCATION.choices
EVEN, PROPORTIONAL = ALLOCATIONS

# A system name names rows of compare.parquet and columns of the annotation task.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --------------------------------------------------------------------------------------------
# Parameters and systems
# --------------------------------------------------------------------------------------------


def check_system_name(name) -> str:
    """``name`` when it can name a system (rows of results, columns of annotation tasks)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ParameterError(
            f"The system name {name!r} must start with a letter or digit and hold only letters, "
            "digits, '_', '.' and '-' (it names rows and columns of the results). Rename it."
        )
    return name


@dataclass(frozen=True)
class CompareParams:
    """Everything that decides the numbers of a comparison (and so its run id).

    Parameters
    ----------
    budget : int
        Total draws over all systems, >= 2 per system and at most 2**25 (:data:`prdist.params.MAX_PLAN_SIZE`).
    seed : int, default=0
        Seed of every draw: system j draws from child j of ``SeedSequence(seed)``.
    distribution : SamplingDistribution, default=uniform
        The sampling distribution of every system (uniform, top-k or score-power).
    allocation : {"even", "proportional"}, default="even"
        How the budget is split (see the module notes).
    weights : {"overlap", "balance"}, default="overlap"
        Mixture weights of the joint precision estimator (:func:`prdist.importance.mixture_weights`).
    confidence : float, default=0.95
        Level of the normal-approximation intervals, in (0, 1).
    gold_budget : int, optional
        A gold audit of this many distinct drawn keys (all of them when fewer are drawn): a
        simple random sample without replacement from its own seed stream
        (:func:`prdist.dataflow.compare.estimation.plan_key_audit`). None: no audit.

    Examples
    --------
    >>> CompareParams(budget=600, seed=1).to_dict()["distribution"]
    {'kind': 'uniform', 'k': None, 'power': None}
    """

    budget: int
    seed: int = P.SEED.default
    distribution: SamplingDistribution = field(default_factory=SamplingDistribution)
    allocation: str = P.ALLOCATION.default
    weights: str = P.WEIGHTS.default
    confidence: float = P.CONFIDENCE.default
    gold_budget: int | None = None

    def __post_init__(self):
        owner = "CompareParams"
        object.__setattr__(self, "budget", P.BUDGET.check(self.budget, owner=owner))
        object.__setattr__(self, "seed", P.SEED.check(self.seed, owner=owner))
        if not isinstance(self.distribution, SamplingDistribution):
            raise ParameterError(
                f"The 'distribution' parameter of {owner} must be a SamplingDistribution. "
                f"Got {self.distribution!r} instead."
            )
        P.ALLOCATION.check(self.allocation, owner=owner)
        P.WEIGHTS.check(self.weights, owner=owner)
        object.__setattr__(self, "confidence", check_confidence(self.confidence, owner=owner))
        object.__setattr__(self, "gold_budget", P.COMPARE_GOLD_BUDGET.check(self.gold_budget, owner=owner))

    def to_dict(self) -> dict:
        d = self.distribution
        return {
            "budget": self.budget,
            "seed": self.seed,
            "distribution": {"kind": d.kind, "k": d.k, "power": d.power},
            "allocation": self.allocation,
            "weights": self.weights,
            "confidence": self.confidence,
            # absent without an audit: the comparisons made before it existed keep their run ids
            **({} if self.gold_budget is None else {"gold_budget": self.gold_budget}),
        }


@dataclass(frozen=True, eq=False)
class System:
    """One named system: an opened Parquet resource."""

    name: str
    resource: Resource


def open_systems(systems, *, storage_options=None, key: str = "key", score: str = "score") -> tuple[System, ...]:
    """Open every system from its Parquet metadata.

    Parameters
    ----------
    systems : mapping of str to str, or sequence of (name, url) pairs
        Unique system names and their Parquet datasets (path or fsspec URL), in result order.
    storage_options : dict, optional
        fsspec options for every URL.
    key, score : str, default="key", "score"
        Column names, the same in every system.

    Returns
    -------
    tuple of System

    Raises
    ------
    InputError
        A name repeats or is malformed, a URL cannot be opened, or the systems type their keys
        differently.
    """
    pairs = list(systems.items()) if isinstance(systems, Mapping) else [tuple(p) for p in systems]
    if not pairs or not all(len(p) == 2 for p in pairs):
        raise ParameterError("Name at least one system as NAME=URL (a name and a Parquet dataset).")
    names = [check_system_name(name) for name, _ in pairs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ParameterError(f"The system name {repeated[0]!r} is given twice; every system needs its own name.")
    opened = tuple(
        System(name, open_resource(url, storage_options=storage_options, key=key, score=score))
        for name, url in pairs
    )
    kinds = {s.resource.key_kind for s in opened}
    if len(kinds) > 1:
        first = opened[0]
        other = next(s for s in opened if s.resource.key_kind != first.resource.key_kind)
        raise DataError(
            f"The systems type their keys differently: {first.name!r} has {first.resource.key_kind} "
            f"keys, {other.name!r} {other.resource.key_kind} keys. An item must have one key in "
            "every system: write every system with one key type."
        )
    return opened


def allocate_budget(support_sizes, budget, allocation: str = EVEN) -> np.ndarray:
    """Split a total budget of draws over the systems.

    Parameters
    ----------
    support_sizes : array-like of int, shape (m,)
        Items with positive probability in every system (used by ``"proportional"``).
    budget : int
        Total draws, at least 2 per system and at most 2**25 (:data:`prdist.params.MAX_PLAN_SIZE`).
    allocation : {"even", "proportional"}, default="even"
        ``"even"``: ``budget // m`` each, one more for the first ``budget % m`` systems.
        ``"proportional"``: 2 each, the rest in proportion to the support sizes (largest
        remainders; ties go to the earlier system).

    Returns
    -------
    ndarray of int64, shape (m,)
        Draws per system, summing to ``budget``.

    Examples
    --------
    >>> allocate_budget([100, 300, 50], 10).tolist()
    [4, 3, 3]
    >>> allocate_budget([100, 300], 10, "proportional").tolist()
    [4, 6]
    """
    owner = "allocate_budget"
    sizes = np.asarray(support_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu" or (sizes < 1).any():
        raise ParameterError(f"The 'support_sizes' parameter of {owner} must be positive integers, one per system. Got {support_sizes!r}.")
    m = sizes.size
    budget = P.BUDGET.check(budget, owner=owner)
    P.ALLOCATION.check(allocation, owner=owner)
    if budget < 2 * m:
        raise ParameterError(
            f"The budget must be at least 2 draws per system (2 x {m} = {2 * m}): each system's "
            f"variance needs two draws. Got {budget} instead."
        )
    if allocation == EVEN:
        out = np.full(m, budget // m, dtype=np.int64)
        out[: budget % m] += 1
        return out
    rest = budget - 2 * m
    share = rest * sizes.astype(np.float64) / sizes.sum()
    out = np.floor(share).astype(np.int64)
    order = np.argsort(-(share - out), kind="stable")
    out[order[: rest - int(out.sum())]] += 1
    return out + 2


