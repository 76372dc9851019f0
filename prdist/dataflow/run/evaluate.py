"""One evaluation of a ranked resource, as steps that the flow wires together.

open -> plan -> extract the planned items -> labels -> estimate -> (bands) -> write. Each step is
a plain function of plain inputs; the flow body in ``flows/_evaluate_release.py`` only calls
them in order, and tests call them directly.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from prdist.frames.arrays import distinct
from prdist.paula import derived
from prdist import params as P
from prdist.errors import DataError, ParameterError
from prdist.paula.plan import plan_paula
from prdist.frames.columns import arrow_numpy, arrow_table, column, column_names
from prdist.verdicts.kinds import Agreement, kinds_of
from prdist.dataflow.io.artifacts import run_id
from prdist.dataflow.io.storage import Location, join_url

if TYPE_CHECKING:  # the bootstrap (SciPy, pandas) is imported by the step that draws bands
    import pandas as pd

    from prdist.bootstrap.replicates import BandStatistics

__all__ = [
    "ArmBands",
    "EvaluationParams",
    "WorstCase",
    "bands",
    "with_band_arm",
    "with_worst_case",
    "Estimate",
    "PlannedRanks",
    "estimate",
    "make_plan",
    "with_judge_audit",
    "resolve_labels",
]

METHODS = P.METHOD.choices


@dataclass(frozen=True)
class EvaluationParams:
    """Everything that decides the numbers of an evaluation (and so its run id).

    Parameters
    ----------
    method : {"paula", "random", "stratified"}
    eps, window, r_tilde : PAULA / stratified grid parameters.
    confidence : float in (0, 1) or None
        The one confidence level of every interval of the run: PAULA's confidence bounds, the
        random method's pointwise intervals, the stratified method's simultaneous intervals and
        the bootstrap bands all hold with this probability (``delta = 1 - confidence``). None
        gives the paper's deterministic PAULA bounds, which hold without a probability under
        assumptions A.1/A.2; the sampling methods and the bands have no such mode, so they refuse
        None.
    sample_size : int, optional
        Labels for the random method (default: as many as the PAULA plan, for a fair comparison).
    seed : int
        Seed of every random draw of the run (recorded only where the run draws: the random and
        stratified plans, the bands).
    oracle_column : str, optional
        Simulation mode: labels come from this column of the resource.
    bands : bool
        Also draw a uniform random arm of ``band_sample`` items and compute bootstrap bands.
    targets : tuple of float
        Precision targets for the deepest guaranteed cut-offs.
    aggregate : {"majority", "latest", "dawid-skene"}
        How the verdicts of several annotators make one label per item
        (:func:`prdist.verdicts.aggregation.aggregate`).
    judge_column : str, optional
        Automatic verdicts from this column of the resource (0/1, or a probability in [0, 1] read
        as correct from 0.5 up), standing for every planned item without an annotator verdict.
    gold_budget : int, optional
        A random gold audit of this many planned items (:func:`prdist.verdicts.audit.plan_gold_audit`,
        seeded by ``seed``); once every audit item has its gold verdict the bounds certify the
        precision as gold says it (:func:`prdist.verdicts.known_quality.gold_bounds`).
    """

    method: str = P.METHOD.default
    eps: float = P.EPS.default
    window: int = P.WINDOW.default
    r_tilde: int | None = None
    confidence: float | None = None  # the Python API's default: deterministic (the command line's: 0.95)
    sample_size: int | None = None
    seed: int = P.SEED.default
    oracle_column: str | None = None
    bands: bool = False
    band_sample: int = P.BAND_SAMPLE.default
    replicates: int = P.BAND_REPLICATES.default
    targets: tuple[float, ...] = derived.TARGETS
    aggregate: str = P.AGGREGATE.default
    judge_column: str | None = None
    gold_budget: int | None = None

    def __post_init__(self):
        owner = "EvaluationParams"
        P.check_all(self, P.EVALUATION, owner=owner)
        for t in self.targets:
            P.TARGET.check(t, owner=owner)
        if self.confidence is None and (self.method != "paula" or self.bands):
            what = "bootstrap bands" if self.method == "paula" else f"the {self.method} method's intervals"
            raise ParameterError(
                f"The 'confidence' parameter of EvaluationParams is None, but {what} hold only with a "
                "probability: give a level such as confidence=0.95 (None means the paper's deterministic "
                "PAULA bounds, without bands)."
            )
        if self.gold_budget is not None and (self.method != "paula" or self.confidence is None):
            raise ParameterError(
                f"The 'gold_budget' parameter of {owner} needs method='paula' with a confidence level (the gold "
                f"bounds hold with a probability); got method={self.method!r}, confidence={self.confidence!r}. "
                "Use the PAULA method with e.g. confidence=0.95."
            )

    @classmethod
    def of(cls, parameters) -> EvaluationParams:
        """The parameters among ``parameters`` (a mapping, e.g. a flow's arguments) that decide an
        evaluation's numbers; the others are left out, the missing ones take their defaults."""
        return cls(**{f.name: parameters[f.name] for f in fields(cls) if f.name in parameters})

    @property
    def delta(self) -> float | None:
        """``1 - confidence``: the error probability of every interval of the run (None: deterministic)."""
        return None if self.confidence is None else 1.0 - self.confidence

    def to_dict(self) -> dict:
        """The parameters that decide this run's numbers (the run id and the manifest's ``params``).

        Parameters without effect on this run are left out: the bands' sample and replicates
        without bands, the random sample size for the other methods, the seed when nothing is
        drawn (deterministic PAULA without bands). Left out, they take their defaults when read
        back, which is what the run used.
        """
        d = asdict(self)
        d["targets"] = list(self.targets)
        if not self.bands:
            del d["band_sample"], d["replicates"]
        if self.method != "random":
            del d["sample_size"]
        if self.method == "paula" and not self.bands and self.gold_budget is None:
            del d["seed"]
        for name in ("judge_column", "gold_budget"):  # absent from the runs made before they existed
            if d[name] is None:
                del d[name]
        return d


def run_key(params: EvaluationParams) -> str:
    """A stable id of the parameters (part of run ids and cache keys)."""
    return run_id(params.to_dict())


def staging_url(out: Location, resource, params: EvaluationParams) -> Location:
    """Where the extracted planned items of (resource, params) are kept between attempts: below
    the runs root ``out``, with its credentials."""
    return join_url(out, "_staging", f"{resource.fingerprint[:20]}-{run_key(params)}.parquet")


@dataclass(frozen=True, eq=False)
class PlannedRanks:
    """The ranks to label, with the role of each (for plan.parquet).

    ``in_plan`` marks the ranks of the method's own plan and ``in_band_arm`` those of the uniform
    random arm that feeds the bootstrap bands (a rank may be in both; it is labeled once).
    """

    method: str
    plan: object
    ranks: np.ndarray
    role: np.ndarray
    grid_index: np.ndarray
    in_plan: np.ndarray | None = None
    in_band_arm: np.ndarray | None = None
    in_audit: np.ndarray | None = None  # the random gold audit (plan.parquet's gold_audit column)
    audit_judge: np.ndarray | None = None  # the judge column's values the audit was stratified by

    def plan_labels(self, labels: np.ndarray) -> np.ndarray:
        """The labels of the method's own plan, aligned with ``plan.ranks``."""
        return labels if self.in_plan is None else labels[self.in_plan]


def with_band_arm(planned: PlannedRanks, arm: np.ndarray) -> PlannedRanks:
    """Add the uniform random arm of the bootstrap bands to a plan (role "random" where new)."""
    ranks = np.union1d(planned.ranks, arm)
    in_plan = np.isin(ranks, planned.ranks, assume_unique=True)
    role = np.full(ranks.size, "random", dtype=object)
    grid_index = np.full(ranks.size, -1, dtype=np.int32)
    role[in_plan], grid_index[in_plan] = planned.role, planned.grid_index
    return PlannedRanks(planned.method, planned.plan, ranks, role.astype(str), grid_index, in_plan, np.isin(ranks, arm, assume_unique=True))


def make_plan(n: int, params: EvaluationParams) -> PlannedRanks:
    """Plan the annotations of ``params.method`` (plus the bands' random arm) for ``n`` items."""
    # prdist.sampling is imported by the methods that use it (5 ms of every PAULA run otherwise).
    paula = plan_paula(n, eps=params.eps, window=params.window, r_tilde=params.r_tilde)
    if params.method == "paula":
        role, grid_index = paula.roles()
        planned = PlannedRanks("paula", paula, paula.ranks, role, grid_index)
    elif params.method == "random":
        from prdist.sampling import plan_random

        size = min(n, params.sample_size or paula.size)
        plan = plan_random(n, size=size, seed=params.seed)
        planned = PlannedRanks("random", plan, plan.ranks, np.full(plan.size, "random"), np.full(plan.size, -1, np.int32))
    else:
        from prdist.sampling import plan_stratified

        plan = plan_stratified(n, eps=params.eps, window=params.window, r_tilde=params.r_tilde, delta=params.delta, seed=params.seed)
        role, grid_index = plan.roles()
        planned = PlannedRanks("stratified", plan, plan.ranks, role, grid_index)
    planned = with_band_arm(planned, band_ranks(n, params)) if params.bands else planned
    # With a judge column the audit waits for the column's values (:func:`with_judge_audit`).
    return planned if params.judge_column else with_gold_audit(planned, params)


def with_gold_audit(planned: PlannedRanks, params: EvaluationParams, judge: np.ndarray | None = None) -> PlannedRanks:
    """Mark the random gold audit of ``params.gold_budget`` items of the method's plan (if any).

    Drawn by :func:`prdist.verdicts.audit.plan_gold_audit` from its own seed stream of the run's
    seed, so that adding an audit moves no other draw; with ``judge`` (the judge column's values,
    one per item), by the judge's classes (:mod:`prdist.verdicts.audit`)."""
    if params.gold_budget is None:
        return planned
    from prdist.verdicts.audit import plan_gold_audit

    seed = int(np.random.SeedSequence([params.seed, 0x601D]).generate_state(1)[0])
    on_plan = None if judge is None else planned.plan_labels(judge)
    audit = plan_gold_audit(planned.plan, params.gold_budget, seed=seed, judge=on_plan)
    return replace(planned, in_audit=np.isin(planned.ranks, audit), audit_judge=judge)


def with_judge_audit(planned: PlannedRanks, items: pd.DataFrame, params: EvaluationParams) -> PlannedRanks:
    """The gold audit of a run with a judge column, drawn once the items' column is read (only the
    column shapes it: judge records in the store can change between runs of a release)."""
    if params.judge_column is None:
        return planned
    return with_gold_audit(planned, params, judge_probabilities(items, params.judge_column))


def band_ranks(n: int, params: EvaluationParams) -> np.ndarray:
    """The uniform random arm that feeds the bootstrap bands (its own seed stream)."""
    from prdist.sampling import plan_random

    seed = np.random.SeedSequence([params.seed, 0xBA7D5])
    return plan_random(n, size=min(n, params.band_sample), seed=seed).ranks


@dataclass(frozen=True)
class WorstCase:
    """The bands over every verdict of the arm items nobody can judge (:func:`with_worst_case`)."""

    text: str  # a sentence saying what precision_worst_low / precision_worst_high are, or why they are NaN
    computed: bool
    assignments: int  # the assignments bootstrapped (0 when not computed)
    band_mean_width: float
    worst_mean_width: float | None
    prevalence_if_incorrect: float  # the arm's prevalence with all of those items incorrect
    prevalence_if_correct: float

    def to_dict(self) -> dict:
        return {"worst_case": self.text, "worst_case_computed": self.computed, "worst_case_assignments": self.assignments,
                "band_mean_width": self.band_mean_width, "worst_mean_width": self.worst_mean_width,
                "prevalence_if_incorrect": self.prevalence_if_incorrect, "prevalence_if_correct": self.prevalence_if_correct}


@dataclass(frozen=True, eq=False)
class ArmBands:
    """The bootstrap bands of a run's random arm (:func:`bands`): bands.parquet and the manifest's "bands"."""

    table: pd.DataFrame  # the bands, plus precision_worst_low / _high when ``worst_case`` is given
    statistics: BandStatistics
    cannot_judge_left_out: int
    worst_case: WorstCase | None = None

    def to_dict(self) -> dict:
        """The manifest's "bands": the statistics, the items left out and, with them, the worst case."""
        assumption = "items nobody can judge are missing at random" if self.cannot_judge_left_out else "none"
        worst = self.worst_case.to_dict() if self.worst_case is not None else {}
        return {**self.statistics.to_dict(), "cannot_judge_left_out": self.cannot_judge_left_out,
                "assumption": assumption, **worst}

    def to_arrow(self) -> pa.Table:
        """bands.parquet: the table, with :meth:`to_dict` as the ``attributes`` of its pandas
        metadata (where pandas keeps a frame's attributes; ``to_pandas()`` gives them back)."""
        table = pa.Table.from_pandas(self.table, preserve_index=False)
        pandas_meta = json.loads(table.schema.metadata[b"pandas"])
        pandas_meta["attributes"] = self.to_dict()
        return table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(pandas_meta).encode()})


def bands(planned: PlannedRanks, items: pa.Table, labels: np.ndarray, params: EvaluationParams, *, client=None,
          settled: np.ndarray | None = None) -> ArmBands | None:
    """Bootstrap bands of the PR curve from the random arm; None while an arm item that can still
    be labeled lacks its label, or when the arm has no PR curve to band (a single class, too few
    positives).

    The arm is an i.i.d. sample of the resource, which is what the bootstrap needs; dropping items
    still awaiting labels could bias it, so bands wait for them. Items nobody can judge
    (``settled``: True where the unknown label will never come) are left out under the stated
    assumption that they are missing at random, and the envelope of the bands over every
    assignment of verdicts to them is added where it is computable: see :func:`with_worst_case`.
    The result counts how many were left out. With no such item the table is the bands alone (no
    worst-case columns: there is no assumption to bound).
    """
    from prdist.dataflow.run.bands import bootstrap_band_result  # distributed: imported by the step that needs it

    if planned.in_band_arm is None:
        return None
    arm_labels = labels[planned.in_band_arm]
    unknown = np.isnan(arm_labels)
    never = unknown & (np.zeros(unknown.size, bool) if settled is None else np.asarray(settled)[planned.in_band_arm])
    if (unknown & ~never).any():
        return None
    scores = column(items, "score", np.float64)[planned.in_band_arm]
    # The arm was drawn from SeedSequence([seed, 0xBA7D5]); the replicates use SeedSequence(seed).
    options = dict(replicates=params.replicates, seed=params.seed, client=client)
    try:
        out = bootstrap_band_result(scores[~never], arm_labels[~never], delta=params.delta, **options)
    except DataError:
        # A degenerate arm (one class, too few positives, constant scores) has no PR curve to
        # band; the run still completes, its manifest saying the bands are unavailable.
        return None
    if not never.any():
        return ArmBands(out.table, out.statistics, cannot_judge_left_out=0)
    table, worst = with_worst_case(out.table, scores, arm_labels, never, delta=params.delta, **options)
    return ArmBands(table, out.statistics, cannot_judge_left_out=int(never.sum()), worst_case=worst)


#: The bands over every assignment of the arm items nobody can judge are computed while the
#: assignments times the replicates stay within this many bootstrap replicates (at B = 1000, up to
#: 5 such items with distinct scores: 32 bootstraps, 0.9 s at an arm of 2,000 on the shared 2-core
#: machine at load 2, 2.7 s at load 4.4; 7 items took 10 s there).
WORST_CASE_REPLICATES = 1 << 15


def with_worst_case(bands: pd.DataFrame, scores: np.ndarray, labels: np.ndarray, never: np.ndarray, *, delta: float,
                    replicates: int, seed: int, client=None, max_replicates: int = WORST_CASE_REPLICATES
                    ) -> tuple[pd.DataFrame, WorstCase]:
    """Add ``precision_worst_low`` / ``precision_worst_high`` to the missing-at-random ``bands``.

    Parameters
    ----------
    bands : pandas.DataFrame
        The bands of the arm without the items nobody can judge.
    scores, labels : ndarray of shape (n,)
        The whole arm; ``labels`` NaN exactly where ``never``.
    never : ndarray of bool
        The arm items nobody can judge (k of them).
    delta, replicates, seed, client
        Those of ``bands`` (:func:`prdist.dataflow.run.bands.bootstrap_bands`).
    max_replicates : int
        The most bootstrap replicates the worst case may draw in all.

    Returns
    -------
    (pandas.DataFrame, WorstCase)
        ``bands`` plus the two columns: at each recall level, the lowest ``band_lower`` and the
        highest ``band_upper`` over ``bands`` itself and the bands of **every** assignment of
        correct / incorrect to the k items, each computed like ``bands`` (same seed, replicates
        and recall grid). Items with equal scores are interchangeable (the class score multisets,
        hence the bands, depend only on how many of them are correct), so the assignments are
        the vectors of correct counts per distinct score: 2^k without ties. This is exact, and
        computed only while assignments x replicates <= ``max_replicates``; otherwise both columns
        are NaN. No cheaper bound is offered because none holds: each band is the empirical
        curve +/- a bootstrap quantile, and neither moves one way with a label (an item made
        correct shifts every recall level), so the bands of all incorrect and all correct do not
        enclose those of mixed assignments, and no assignment's quantile bounds another's.
        The :class:`WorstCase` says which (a sentence), how many assignments, whether computed,
        the mean widths and the prevalence with all of the k items incorrect / correct.
    """
    from prdist.dataflow.run.bands import bootstrap_replicates
    from prdist.dataflow.labels.unjudged import assignment_count, count_assignments

    values, group = np.unique(scores[never], return_inverse=True)
    sizes = np.bincount(group, minlength=values.size)
    place = np.empty(group.size, np.int64)  # each item's place among the items of its score
    order = np.argsort(group, kind="stable")
    place[order] = np.arange(group.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    count = assignment_count(sizes)
    computed = count * replicates <= max_replicates
    low = bands["band_lower"].to_numpy(dtype=np.float64).copy()
    high = bands["band_upper"].to_numpy(dtype=np.float64).copy()
    if computed:
        for correct in count_assignments(sizes):
            filled = labels.copy()
            filled[never] = place < correct[group]
            assigned = bootstrap_replicates(scores, filled, replicates=replicates, seed=seed, client=client).bands(delta)
            np.minimum(low, assigned["band_lower"].to_numpy(), out=low)
            np.maximum(high, assigned["band_upper"].to_numpy(), out=high)
    else:
        low[:] = high[:] = np.nan
    k, known = int(never.sum()), labels[~never]
    out = bands.assign(precision_worst_low=low, precision_worst_high=high)
    return out, WorstCase(
        text=_worst_case_sentence(k, count, replicates, max_replicates, computed),
        computed=bool(computed),
        assignments=int(count) if computed else 0,
        band_mean_width=float(np.mean(out["band_upper"] - out["band_lower"])),
        worst_mean_width=float(np.mean(high - low)) if computed else None,
        prevalence_if_incorrect=float(known.sum() / labels.size),
        prevalence_if_correct=float((known.sum() + k) / labels.size),
    )


def _worst_case_sentence(k: int, count: int, replicates: int, limit: int, computed: bool) -> str:
    if computed:
        return (f"precision_worst_low / precision_worst_high: at each recall level, the lowest lower and the highest "
                f"upper simultaneous band over the missing-at-random band and the bands of every assignment of correct / "
                f"incorrect to the {k} arm item(s) nobody can judge ({count:,} distinct assignments, each bootstrapped "
                "with the same seed): exact")
    return (f"precision_worst_low / precision_worst_high: not computed (NaN): the {k} arm items nobody can judge have "
            f"{_how_many(count)} distinct assignments, which at {replicates:,} replicates each exceed the limit of "
            f"{limit:,} bootstrap replicates; the bands with all of them incorrect and all correct do not bound the "
            "others (the bootstrap band does not move one way with a label), so no worst case is stated")


def _how_many(count: int) -> str:
    """A count that may be astronomically large, readably.

    >>> _how_many(1024), _how_many(2**108)
    ('1,024', 'about 2^108')
    """
    return f"{count:,}" if count < 10**9 else f"about 2^{count.bit_length() - 1}"


@dataclass(frozen=True, eq=False)
class LabelResolution:
    """The label of every extracted item and why the unknown ones are unknown.

    ``kinds`` holds, per item, "correct", "incorrect", "cannot_judge" (nobody can judge it: never
    requested again), "disputed" (annotators tie: requested from one more annotator) or "missing"
    (no verdict yet). ``labels`` is 1 / 0 where known and NaN otherwise, which the bounds count as
    0 (lower) and 1 (upper).
    """

    labels: np.ndarray  # float64 aligned with the items; NaN = unknown
    kinds: np.ndarray  # str aligned with the items
    from_oracle: int
    from_store: int
    relabeled: int
    agreement: dict = field(default_factory=dict)
    # Verdicts of known quality (prdist.verdicts.roles); None where the run has no such source.
    judged: np.ndarray | None = None  # True where the label is a judge's (no annotator verdict)
    judge: np.ndarray | None = None  # the judge's probability or 0/1 verdict per item, NaN none
    gold: np.ndarray | None = None  # the gold verdict per item (1 / 0 / NaN)
    gold_kinds: np.ndarray | None = None
    audit: np.ndarray | None = None  # the random gold audit

    @property
    def gold_awaiting(self) -> np.ndarray:
        """Audit items without a gold verdict yet (an expert's "cannot judge" is one)."""
        if self.audit is None:
            return np.zeros(self.labels.size, dtype=bool)
        return self.audit & (self.gold_kinds == "missing")

    @property
    def certified_gold(self) -> np.ndarray | None:
        """The gold verdicts of the audit (NaN elsewhere) once no audit item awaits one, else None."""
        if self.audit is None or self.gold_awaiting.any():
            return None
        return np.where(self.audit, self.gold, np.nan)

    def verdict_quality(self, planned: PlannedRanks) -> dict:
        """Per source (judge, annotators): agreement with gold over the audit items of the plan,
        overall and per score region (:func:`prdist.verdicts.known_quality.verdict_quality`), with
        counts; design-weighted where the audit was drawn by the judge's classes."""
        from prdist.verdicts.known_quality import score_regions, verdict_quality

        gold = planned.plan_labels(np.where(self.audit, self.gold, np.nan))
        judged = np.zeros(self.labels.size, bool) if self.judged is None else self.judged
        sources = {"annotators": np.where(judged, np.nan, self.labels)}
        if self.judge is not None:
            sources["judge"] = self.judge
        regions = score_regions(planned.plan)
        design = {}
        if planned.audit_judge is not None:  # an audit drawn by the judge's classes: weigh it back
            from prdist.verdicts.audit import audit_design

            design = audit_design(planned.plan, gold, planned.plan_labels(planned.audit_judge))
        return {name: verdict_quality(planned.plan_labels(said), gold, regions=regions, **design).to_dict()
                for name, said in sorted(sources.items()) if (~np.isnan(planned.plan_labels(said))).any()}

    def count(self, kind: str) -> int:
        return int(np.count_nonzero(self.kinds == kind))

    @property
    def unknown(self) -> int:
        return int(np.isnan(self.labels).sum())

    @property
    def awaiting(self) -> np.ndarray:
        """Items that can still be labeled but have no verdict (missing or disputed), or that are
        in the gold audit without a gold verdict."""
        return np.isin(self.kinds, ("missing", "disputed")) | self.gold_awaiting

    def to_dict(self) -> dict:
        known = self.labels[~np.isnan(self.labels)]
        return {
            "annotations": int(self.labels.size),
            "labeled": int(known.size),
            "unknown": self.unknown,
            "cannot_judge": self.count("cannot_judge"),
            "disputed": self.count("disputed"),
            "awaiting": int(self.awaiting.sum()),
            "positives": int(known.sum()),
            "from_oracle": self.from_oracle,
            "from_store": self.from_store,
            "relabeled_in_store": self.relabeled,
            **self._known_quality_counts(),
        }

    def _known_quality_counts(self) -> dict:
        """Counts of the judge and the gold audit, only for runs that have them (run ids of others
        stay as they were)."""
        out = {}
        if self.judged is not None and (self.judge is not None or self.judged.any()):
            out["from_judge"] = int(self.judged.sum())
        if self.audit is not None:
            gold = self.gold[self.audit]
            out["gold_audit"] = {"items": int(self.audit.sum()), "gold": int((~np.isnan(gold)).sum()),
                                 "gold_positives": int(np.nansum(gold)),
                                 "cannot_judge": int((self.gold_kinds[self.audit] == "cannot_judge").sum()),
                                 "awaiting": int(self.gold_awaiting.sum())}
        return out


def resolve_labels(items: pa.Table, *, oracle_column: str | None = None, store: Location | str | None = None, storage_options=None,
                   rule: str = "majority", judge_column: str | None = None, audit: np.ndarray | None = None) -> LabelResolution:
    """Labels of the extracted items: the oracle column in simulations, else the label store's
    verdicts aggregated by ``rule``.

    With ``judge_column`` the judge's verdicts (:func:`judge_probabilities`, correct from 0.5 up)
    stand for every item without another verdict; in a simulation they stand for every item and
    the oracle column plays gold. ``audit`` (bool per item) marks the gold audit, whose gold
    verdicts come from the store's gold records, or in a simulation from the oracle column.
    """
    judge = None if judge_column is None else judge_probabilities(items, judge_column)
    if oracle_column is not None:
        truth = _column_labels(items, oracle_column)
        labels = truth if judge is None else np.where(np.isnan(judge), truth, judge >= 0.5)
        judged = np.zeros(truth.size, bool) if judge is None else ~np.isnan(judge)
        resolution = LabelResolution(labels, kinds_of(labels), from_oracle=int((~np.isnan(labels) & ~judged).sum()),
                                     from_store=0, relabeled=0)
        gold, gold_kinds = truth, kinds_of(truth)
    else:
        found = _store_verdicts(items, store, storage_options, rule)
        values, kinds, judged, stored_judge, relabeled, agreement, gold, gold_kinds = found
        if judge is not None:  # the column stands where neither an annotator nor a stored judge spoke
            stand = (kinds == "missing") & ~np.isnan(judge)
            values[stand] = judge[stand] >= 0.5
            kinds[stand] = kinds_of(values[stand])
            judged |= stand
            judge = np.where(np.isnan(judge), stored_judge, judge)
        elif judged.any():
            judge = stored_judge
        resolution = LabelResolution(values, kinds.astype(str), from_oracle=0, from_store=int((~np.isnan(values) & ~judged).sum()),
                                     relabeled=relabeled, agreement=agreement)
    return replace(resolution, judged=judged, judge=judge, gold=gold, gold_kinds=gold_kinds,
                   audit=None if audit is None else np.asarray(audit, dtype=bool))


def _store_verdicts(items: pa.Table, store, storage_options, rule: str) -> tuple:
    """``store_verdicts`` (:mod:`prdist.dataflow.labels.store`, pandas), or without a store none."""
    if store is not None:
        from prdist.dataflow.labels.store import store_verdicts

        return store_verdicts(column(items, "key"), store, storage_options=storage_options, rule=rule)
    n, nothing = items.num_rows, np.full(items.num_rows, np.nan)
    return (nothing.copy(), np.full(n, "missing", dtype=object), np.zeros(n, dtype=bool), nothing.copy(), 0,
            dict(Agreement(None, 0, 0).to_dict(), rule=rule), nothing.copy(), np.full(n, "missing"))


def _column_labels(items: pa.Table, name: str) -> np.ndarray:
    """The 0/1 truth of a simulation's oracle column (NaN where null)."""
    values = _numeric_column(items, name, what="oracle column", holds="the 0/1 truth", strict=False)
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        raise ParameterError(f"The oracle column {name!r} holds values other than 0/1, e.g. {values[bad][0]!r}.")
    return values


def judge_probabilities(items: pa.Table, name: str) -> np.ndarray:
    """The judge column of the planned items: 0/1 verdicts or probabilities in [0, 1] (NaN: none).

    Only the planned items' values are read (they come with the extraction, per row group), so a
    judge on 10^9 items is never gathered on one process. Anything else is refused in one line.
    """
    values = _numeric_column(items, name, what="judge column", holds="the judge's 0/1 verdict or probability", strict=True)
    bad = ~np.isnan(values) & ~((values >= 0) & (values <= 1))
    if bad.any():
        raise ParameterError(
            f"The judge column {name!r} holds {int(bad.sum())} value(s) outside [0, 1], e.g. {float(values[bad][0])!r}; a judge "
            "gives 0/1 or a probability of being correct. Fix the column or name another."
        )
    return values


def _numeric_column(items: pa.Table, name: str, *, what: str, holds: str, strict: bool) -> np.ndarray:
    """The column as float64 (NaN where null); ``strict`` refuses text, else it reads as NaN."""
    if name not in column_names(items):
        raise ParameterError(
            f"The {what} {name!r} is not in the resource (columns: {sorted(column_names(items))}). Name the column that holds {holds}."
        )
    raw = items.column(name)
    kind = raw.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind):
        return np.asarray(arrow_numpy(raw.cast(pa.float64(), safe=False)), dtype=np.float64)  # 2^53+ rounds, as pandas did
    import pandas as pd  # a column of text (or other values) is read as numbers by pandas

    raw = raw.to_pandas()
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    text = np.isnan(values) & raw.notna().to_numpy()
    if strict and text.any():
        raise ParameterError(
            f"The {what} {name!r} holds {int(text.sum())} value(s) that are not numbers, e.g. {raw[text].iloc[0]!r}; "
            "a judge gives 0/1 or a probability of being correct. Fix the column or name another."
        )
    return values


@dataclass(frozen=True, eq=False)
class Estimate:
    """The estimate of one run: the bounds table and what is derived from it."""

    bounds: pa.Table  # rank, precision_lower, precision_upper, yield_lower, yield_upper
    cutoff_ranks: dict  # target -> deepest rank with guaranteed precision (0: none)
    average_precision: tuple[float, float] | None
    diagnostics: dict
    paula: object | None = field(default=None)  # PaulaBounds for the paula method
    certifies: str = "verdicts"  # "gold": the bounds hold for the precision as gold says it


def estimate(planned: PlannedRanks, labels: np.ndarray, params: EvaluationParams, *, gold: np.ndarray | None = None,
             judge: np.ndarray | None = None) -> Estimate:
    """Bounds (PAULA) or intervals (sampling baselines) from the labels of the planned items.

    With ``gold`` (:attr:`LabelResolution.certified_gold`: the complete gold audit, NaN elsewhere)
    the bounds are :func:`gold_estimate`'s, which hold for the precision as gold says it.

    PAULA's bounds also take every other known verdict of the run (the bands' random arm) where
    it tightens them: :func:`with_every_label` (the deterministic bounds always; the confidence
    bounds when the run has such an arm). The counts it uses hold without assumptions, so the
    tightened bounds hold whenever the untightened ones do, at the same confidence. Every
    interval uses the run's one level: ``delta = 1 - params.confidence``.
    """
    from prdist.paula.bounds import paula_bounds

    every = labels
    labels = planned.plan_labels(labels)
    if gold is not None:
        return gold_estimate(planned, labels, planned.plan_labels(gold), judge, params)
    if planned.method == "paula":
        kwargs = {} if params.confidence is None else {"confidence": params.confidence}
        b = paula_bounds(planned.plan, labels, **kwargs)
        cutoffs = {t: derived.deepest_rank(b, t) for t in params.targets}
        columns, diagnostics = b.columns(), b.diagnostics.to_dict()
        table = arrow_table(columns)
        if params.confidence is None or planned.in_band_arm is not None:
            table = with_every_label(table, planned.ranks, every)
            diagnostics["tightened_by_other_labels"] = int((column(table, "yield_lower") != columns["yield_lower"]).sum()
                                                           + (column(table, "yield_upper") != columns["yield_upper"]).sum())
        return Estimate(table, cutoffs, derived.average_precision_bounds(b), diagnostics, b)
    from prdist.sampling import estimate_random, estimate_stratified  # as in make_plan

    plan = planned.plan
    if planned.method == "random":
        ranks = _evaluation_ranks(plan.n, params)
        est = estimate_random(plan, labels, ranks=ranks, delta=params.delta)
        lower, upper = est.lower, est.upper
        diagnostics = {"method": "random", "pointwise_confidence": 1 - params.delta}
    else:
        est = estimate_stratified(plan, labels, delta=params.delta)
        ranks, lower, upper = _through_n(est.grid, est.grid_lower, est.grid_upper, plan.n)
        diagnostics = {"method": "stratified", "simultaneous_confidence": 1 - params.delta}
    table = arrow_table(
        {
            "rank": np.asarray(ranks, dtype=np.int64),
            "precision_lower": lower,
            "precision_upper": upper,
            "yield_lower": lower * ranks,
            "yield_upper": upper * ranks,
        }
    )
    return Estimate(table, {}, None, diagnostics)


def gold_estimate(planned: PlannedRanks, verdicts: np.ndarray, gold: np.ndarray, judge: np.ndarray | None,
                  params: EvaluationParams) -> Estimate:
    """Bounds on the precision as gold says it, at every rank, from the verdicts of the plan and
    the gold verdicts of its random audit (:func:`prdist.verdicts.known_quality.gold_bounds`, at the run's
    confidence), whatever the verdicts' quality. ``judge`` (the judge's probabilities on the plan,
    NaN where none) lets the prediction-powered part use them.

    The cut-off of a target is the deepest rank of the table whose lower bound reaches it.
    """
    found = gold_paula(planned, verdicts, gold, judge, params)
    table = arrow_table(found.columns())
    ranks, lower = column(table, "rank"), column(table, "precision_lower")
    cutoffs = {t: int(ranks[lower >= t].max()) if (lower >= t).any() else 0 for t in params.targets}
    return Estimate(table, cutoffs, None, {"gold_bounds": found.to_dict()}, certifies="gold")


def gold_paula(planned: PlannedRanks, verdicts: np.ndarray, gold: np.ndarray, judge: np.ndarray | None, params: EvaluationParams):
    """The :class:`~prdist.verdicts.known_quality.GoldBounds` of :func:`gold_estimate` (``verdicts`` and
    ``gold`` aligned with the plan, ``judge`` with the items)."""
    from prdist.verdicts.known_quality import gold_bounds

    judge = None if judge is None else planned.plan_labels(judge)
    audit_judge = None if planned.audit_judge is None else planned.plan_labels(planned.audit_judge)
    return gold_bounds(planned.plan, verdicts, gold, confidence=params.confidence, judge=judge, audit_judge=audit_judge)


def _through_n(ranks: np.ndarray, lower: np.ndarray, upper: np.ndarray, n: int):
    """Stratified intervals on their grid, plus rank ``n`` where the grid ends before it.

    Algorithm 1's grid stops at g_L, the last grid point <= n, and no draw covers (g_L, n]. The
    row at n holds without any assumption on those ranks: at least the yield at g_L, at most that
    plus n - g_L. As g_L > n / (1 + eps), it widens the interval by less than eps / (1 + eps).

    Examples
    --------
    >>> r, lo, hi = _through_n(np.array([10, 20]), np.array([0.5, 0.4]), np.array([0.7, 0.6]), 25)
    >>> r.tolist(), lo.tolist(), hi.tolist()
    ([10, 20, 25], [0.5, 0.4, 0.32], [0.7, 0.6, 0.68])
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.size == 0 or ranks[-1] >= n:
        return ranks, lower, upper
    last = ranks[-1]
    return (np.append(ranks, n), np.append(lower, lower[-1] * last / n),
            np.append(upper, (upper[-1] * last + (n - last)) / n))


def with_every_label(table: pa.Table, ranks: np.ndarray, labels: np.ndarray) -> pa.Table:
    """Tighten a bounds table with the assumption-free counts of every known verdict.

    Whatever arm a verdict came from, the yield at rank r is at least the number of items known
    correct at ranks <= r and at most r minus those known incorrect. Where the two disagree
    (the table's own assumptions are false there), the counts, which need none, are kept.

    Examples
    --------
    >>> t = pa.table({"rank": [2, 4], "precision_lower": [0.0, 0.0], "precision_upper": [1.0, 1.0],
    ...               "yield_lower": [0.0, 0.0], "yield_upper": [2.0, 4.0]})
    >>> tight = with_every_label(t, np.array([1, 3, 4]), np.array([1.0, 0.0, np.nan]))
    >>> tight["yield_lower"].to_pylist(), tight["yield_upper"].to_pylist()
    ([1.0, 1.0], [2.0, 3.0])
    """
    r = column(table, "rank")
    at = np.searchsorted(ranks, r, side="right")
    correct = np.concatenate(([0], np.cumsum(labels == 1)))[at]
    incorrect = np.concatenate(([0], np.cumsum(labels == 0)))[at]
    lower = np.maximum(column(table, "yield_lower"), correct)
    upper = np.minimum(column(table, "yield_upper"), r - incorrect)
    crossed = lower > upper
    lower, upper = np.where(crossed, correct, lower), np.where(crossed, r - incorrect, upper)
    tightened = {"yield_lower": lower.astype(np.float64), "yield_upper": upper.astype(np.float64),
                 "precision_lower": lower / r, "precision_upper": upper / r}
    return arrow_table({name: tightened.get(name, table.column(name)) for name in table.column_names})


def _evaluation_ranks(n: int, params: EvaluationParams) -> np.ndarray:
    """Ranks to report sampling estimates at: the PAULA grid (comparable tables) plus n."""
    paula = plan_paula(n, eps=params.eps, window=params.window, r_tilde=params.r_tilde)
    prefix = distinct(np.geomspace(1, paula.prefix_end, num=min(paula.prefix_end, 64)).astype(np.int64))
    return distinct(np.concatenate((prefix, paula.grid, [n])))
