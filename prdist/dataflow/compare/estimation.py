"""Labels, estimates and the run directory of a comparison (steps 6 and 7 of :mod:`prdist.dataflow.compare`).

DESIGN. Everything here runs once, in the user's session, on the joint sample
(:class:`~prdist.dataflow.compare.sampling.DrawnSample`, a few thousand keys at most): a label
lookup, the in-memory estimators of :mod:`prdist.importance`, and the run directory, committed
by :func:`prdist.dataflow.io.artifacts.commit_run`.

What a comparison certifies. Its intervals are for the precision as its labels say it. The
labels are the store's verdicts (annotators', a judge's where no annotator spoke) -
``certifies: "verdicts"`` - unless *every* drawn item has a gold verdict in the store: then the
labels are the gold verdicts, and the intervals are for the precision as gold says it
(``certifies: "gold"``). Gold on only some drawn items changes no label (those items are not a
random subsample the comparison designed, so no gold-valid correction is made from them); it
measures the verdicts' agreement with gold there (``verdict_quality``, per source).

The designed gold audit. With ``gold_budget`` N, a simple random sample without replacement of
min(N, D) of the D distinct drawn keys (:func:`plan_key_audit`, its own seed stream: the draws
do not move) awaits gold verdicts, flagged in the annotation task's ``gold_audit`` column. Once
every drawn key has a verdict (or nobody can judge it) and every audited key a gold verdict (or
the expert cannot judge it: then it counts as not audited), the precision intervals are the
two-phase, prediction-powered estimate of :mod:`prdist.importance.two_phase` - the verdicts
(1/2 where none) predict gold, the audit corrects them - for the precision as gold says it
(``certifies: "gold"``, ``gold_method`` in the manifest), with the verdicts' estimate beside it
(``verdicts_precision``). Recall is a ratio and is not corrected: it stays as the verdicts say
it (``recall_certifies: "verdicts"``). Gold outside the audit still only measures
``verdict_quality``. Every drawn key with gold keeps the path above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from prdist._validation import check_choice
from prdist.errors import DataError, ParameterError
from prdist.importance import JointSample, estimate_precision, estimate_precision_two_phase, estimate_recall
from prdist.dataflow.io.artifacts import (
    RunDirectory,
    RunOutcome,
    commit_run,
    committed_outcome,
    labels_fingerprint,
    run_id,
    versions,
)
from prdist.dataflow.compare.params import CompareParams
from prdist.dataflow.compare.sampling import DrawnSample
from prdist.dataflow.ranks.extraction import Extraction
from prdist.dataflow.labels.task import export_annotation_task
from prdist.dataflow.labels.importer import read_label_file
from prdist.dataflow.labels.store import lookup_labels, normalise_keys
from prdist.dataflow.io.storage import given_url

__all__ = [
    "ExhaustiveSample",
    "LabeledSample",
    "annotation_items",
    "attach_labels",
    "estimate_audited",
    "estimate_systems",
    "plan_key_audit",
    "read_exhaustive",
    "write_compare",
]

# compare.parquet: the contract's columns first, then the rest.
_CONTRACT_COLUMNS = [
    "system", "precision", "precision_se", "precision_ci_low", "precision_ci_high",
    "recall", "recall_se", "n_samples",
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Exhaustive sample, labels, annotation task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ExhaustiveSample:
    """The correct keys of an exhaustively labeled scope (for recall).

    ``keys`` are typed like the systems' keys; ``labeled`` counts every labeled key of the file,
    ``fingerprint`` identifies its content.
    """

    url: str
    keys: np.ndarray
    labeled: int
    fingerprint: str


def read_exhaustive(url: str, *, key_kind: str, storage_options=None) -> ExhaustiveSample:
    """Read an exhaustive sample: a label file (CSV, JSONL or Parquet with ``key``, ``label``).

    Parameters
    ----------
    url : str
        The label file.
    key_kind : {"int", "string"}
        The systems' key type (``Resource.key_kind``); keys are converted to it.
    storage_options : dict, optional

    Returns
    -------
    ExhaustiveSample
        Its correct keys (label 1), at least 2 of them.
    """
    check_choice(key_kind, name="key_kind", owner="read_exhaustive", choices=("int", "string"))
    frame = read_label_file(url, storage_options=storage_options).verdicts
    if frame["key"].duplicated().any():
        clash = frame.groupby("key")["label"].nunique()
        if (clash > 1).any():
            raise DataError(
                f"The exhaustive sample {url!r} labels {clash.index[clash > 1][0]!r} both 0 and 1. "
                "Resolve the disagreement first."
            )
        frame = frame.drop_duplicates("key")
    text = frame.loc[frame["label"] == 1, "key"].astype(str).to_numpy(dtype=object)
    if text.size < 2:
        raise DataError(
            f"The exhaustive sample {url!r} holds {text.size} correct item(s); recall needs at least "
            "2. Label a larger scope exhaustively."
        )
    if key_kind == "int":
        numbers = pd.to_numeric(pd.Series(text), errors="coerce")
        bad = numbers.isna() | (numbers % 1 != 0)
        if bad.any():
            raise DataError(
                f"The exhaustive sample {url!r} has the key {text[int(np.flatnonzero(bad)[0])]!r}, "
                "but the systems have integer keys. Use the systems' keys."
            )
        keys = numbers.to_numpy().astype(np.int64)
    else:
        keys = text
    return ExhaustiveSample(url=url, keys=keys, labeled=len(frame), fingerprint=run_id(sorted(map(str, text.tolist()))))


@dataclass(frozen=True, eq=False)
class LabeledSample:
    """The joint sample with the labels the store holds, and what the lookup found.

    ``cannot_judge`` marks the drawn items nobody can judge: they never come back as a label,
    so ``missing`` (what awaits annotation) leaves them out.
    """

    sample: JointSample
    missing: int
    relabeled: int
    relabeled_examples: tuple[str, ...]
    cannot_judge: np.ndarray | None = None
    disputed: int = 0
    agreement: dict = field(default_factory=dict)
    certifies: str = "verdicts"  # "gold": every drawn item has a gold verdict, and the labels are gold's
    verdict_quality: dict | None = None  # per source, agreement with gold on the drawn items that have it
    gold: np.ndarray | None = None  # the drawn items' gold verdicts (NaN none); None when none has one
    audit: np.ndarray | None = None  # the designed gold audit (bool per drawn key); None without one
    gold_awaiting: np.ndarray | None = None  # audited keys still without a gold verdict
    two_phase: bool = False  # certified gold by the designed audit (the verdicts are the labels)
    judge: np.ndarray | None = None  # the judge's verdict per drawn key (NaN none): the audit's predictor first

    @property
    def awaiting(self) -> np.ndarray:
        unknown = np.isnan(self.sample.labels)
        wanted = unknown if self.cannot_judge is None else unknown & ~self.cannot_judge
        return wanted if self.gold_awaiting is None else wanted | self.gold_awaiting

    def audit_record(self) -> dict | None:
        """The manifest's ``gold_audit``: the audit's keys, those with gold, without it, awaiting it."""
        if self.audit is None:
            return None
        with_gold = 0 if self.gold is None else int((self.audit & ~np.isnan(self.gold)).sum())
        waiting = int(self.gold_awaiting.sum())
        return {"keys": int(self.audit.sum()), "drawn_keys": int(self.audit.size), "gold": with_gold,
                "cannot_judge": int(self.audit.sum()) - with_gold - waiting, "awaiting": waiting}


def plan_key_audit(drawn: DrawnSample, params: CompareParams) -> np.ndarray | None:
    """The designed gold audit: min(N, D) of the D distinct drawn keys, a simple random sample
    without replacement, from the stream ``SeedSequence([seed, 0x601D])`` of the comparison's
    seed, apart from the joint draws (they use ``SeedSequence(seed)``'s children, so adding an
    audit moves none of them). None without ``gold_budget``.
    """
    if params.gold_budget is None:
        return None
    d = drawn.sample.keys.size
    rng = np.random.default_rng(np.random.SeedSequence([params.seed, 0x601D]))
    audit = np.zeros(d, dtype=bool)
    audit[rng.choice(d, size=min(params.gold_budget, d), replace=False)] = True
    return audit


def attach_labels(drawn: DrawnSample, store: str | None, *, storage_options=None, rule: str = "majority",
                  audit: np.ndarray | None = None) -> LabeledSample:
    """Look every drawn key up in the shared label store (by key: one label serves every system),
    several annotators' verdicts made one by ``rule``; ``audit`` (:func:`plan_key_audit`) marks
    the keys of the designed gold audit, which await a gold verdict too.

    A store that does not exist yet holds no labels.
    """
    keys = drawn.sample.keys
    lookup = lookup_labels(store, keys, storage_options=storage_options, rule=rule)
    text = normalise_keys(keys).to_numpy()
    values = lookup.labels.reindex(text).to_numpy(dtype=np.float64)
    kinds = lookup.kinds.reindex(text).to_numpy(dtype=object)
    gold = lookup.roles.gold.reindex(text).to_numpy(dtype=np.float64)
    every = bool(gold.size) and not np.isnan(gold).any()
    sample = drawn.sample.with_labels(keys, gold if every else values)
    cannot = np.zeros(text.size, dtype=bool) if every else kinds == "cannot_judge"
    missing = np.isnan(sample.labels) & ~cannot
    gold_awaiting, two_phase = None, False
    if audit is not None:
        gold_kinds = lookup.roles.gold_kinds.reindex(text).to_numpy(dtype=object)
        gold_awaiting = audit & np.isnan(gold) & (gold_kinds != "cannot_judge")
        missing = missing | gold_awaiting
        two_phase = not every and not missing.any() and int((audit & ~np.isnan(gold)).sum()) >= 2
    certifies = "gold" if every or two_phase else "verdicts"
    return LabeledSample(sample, int(missing.sum()), lookup.relabeled, lookup.examples,
                         cannot_judge=cannot, disputed=0 if every else int((kinds == "disputed").sum()),
                         agreement=lookup.agreement_record(), certifies=certifies,
                         verdict_quality=_quality_against_gold(lookup, text, values, gold),
                         gold=None if np.isnan(gold).all() else gold, audit=audit, gold_awaiting=gold_awaiting,
                         two_phase=two_phase, judge=lookup.roles.judge.reindex(text).to_numpy(dtype=np.float64))


def _quality_against_gold(lookup, text: np.ndarray, values: np.ndarray, gold: np.ndarray) -> dict | None:
    """Agreement with gold on the drawn items that have it, per source (the judge's voted verdict;
    the annotators' where no judge's stood in), by :func:`prdist.verdicts.known_quality.verdict_quality`;
    None when no drawn item has gold."""
    if np.isnan(gold).all():
        return None
    from prdist.verdicts.known_quality import verdict_quality

    judged = lookup.judged.reindex(text).fillna(False).to_numpy(dtype=bool)
    sources = {"annotators": np.where(judged, np.nan, values), "judge": lookup.roles.judge.reindex(text).to_numpy(dtype=np.float64)}
    return {name: verdict_quality(said, gold).to_dict() for name, said in sources.items() if (~np.isnan(said) & ~np.isnan(gold)).any()}


def annotation_items(drawn: DrawnSample, sample: JointSample, awaiting: np.ndarray | None = None,
                     items: pd.DataFrame | None = None, gold_audit: np.ndarray | None = None) -> pd.DataFrame:
    """The drawn items still without a label: what an annotator needs to see.

    Parameters
    ----------
    drawn : DrawnSample
    sample : JointSample
        The labeled joint sample.
    awaiting : ndarray of bool, optional
        The drawn keys to list (default: every key without a label).
    items : pandas.DataFrame, optional
        Their item columns, one row per listed key in order
        (:func:`~prdist.dataflow.compare.sampling.item_columns`; where systems disagree on a key's
        columns, the first system's).

    Returns
    -------
    pandas.DataFrame
        One row per listed key, in order of first draw: ``key``, the item columns (one named like
        a column below becomes ``item_<name>``), ``systems`` (the systems that output it,
        ``;``-separated), ``draws`` (how often it was drawn in all), then ``score_<system>`` for
        every system (NaN where the system does not output it), then ``gold_audit`` when given.
    """
    unknown = np.isnan(sample.labels) if awaiting is None else awaiting
    names = np.array(sample.systems, dtype=object)
    present = ~np.isnan(drawn.scores[unknown])
    frame = pd.DataFrame({"key": sample.keys[unknown]})
    about = {"systems": [";".join(names[row]) for row in present], "draws": sample.counts[unknown].sum(axis=1)}
    about.update({f"score_{name}": drawn.scores[unknown, j] for j, name in enumerate(sample.systems)})
    if gold_audit is not None:  # which rows want a gold verdict (import them with --role gold)
        about["gold_audit"] = gold_audit[unknown]
    if items is not None:
        if len(items) != len(frame):
            raise ParameterError(f"annotation_items got item columns for {len(items)} keys, not the {len(frame)} listed.")
        taken = {"key", "label", *about}
        renamed = items.rename(columns=lambda c: f"item_{c}" if c in taken else c).reset_index(drop=True)
        frame = pd.concat([frame, renamed], axis=1)
    return frame.assign(**about)


# --------------------------------------------------------------------------------------------
# Estimates
# --------------------------------------------------------------------------------------------


def estimate_systems(sample: JointSample, drawn: DrawnSample, params: CompareParams, *,
                     exhaustive_in_pool=None) -> tuple[pd.DataFrame, dict]:
    """Estimate every system's precision (and recall, given an exhaustive sample).

    Parameters
    ----------
    sample : JointSample
        Fully labeled (else :class:`~prdist.errors.AwaitingLabels`).
    drawn : DrawnSample
        For the system sizes.
    params : CompareParams
    exhaustive_in_pool : array-like of bool, optional
        Pool membership of an exhaustive sample's correct keys (``DrawnSample.extra_in_pool``).

    Returns
    -------
    frame : pandas.DataFrame
        The rows of compare.parquet: system, precision, precision_se, precision_ci_low,
        precision_ci_high, recall, recall_se, n_samples, then recall_ci_low, recall_ci_high,
        pooled_recall, pooled_recall_se, simple_precision, simple_precision_se, simple_ci_low,
        simple_ci_high, n_items, support.
    diagnostics : dict
        Mixture weights, overlaps, pool recall and notes (why a recall is NaN).
    """
    est = estimate_precision(sample, weights=params.weights, confidence=params.confidence)
    frame = est.to_frame()
    m = len(sample.systems)
    notes = []
    diagnostics = {"weights": est.weights.tolist(), "overlaps": sample.overlaps.tolist()}
    nan = np.full(m, np.nan)
    recall = {"recall": nan, "recall_se": nan, "recall_ci_low": nan, "recall_ci_high": nan,
              "pooled_recall": nan, "pooled_recall_se": nan}
    if exhaustive_in_pool is None:
        # ν̂ does not depend on the exhaustive sample (only θ̂ does): any valid one gives ν̂ alone.
        in_pool, note = np.ones(2, dtype=bool), (
            "recall is NaN: it needs an exhaustive sample (--exhaustive); pooled_recall is the share "
            "of the pool's correct items that each system outputs."
        )
    else:
        in_pool, note = np.asarray(exhaustive_in_pool, dtype=bool), None
    try:
        rec = estimate_recall(sample, exhaustive_in_pool=in_pool, confidence=params.confidence)
    except DataError as exc:
        # No correct item among the draws: recall cannot be weighed, precision still stands.
        notes.append(f"recall and pooled_recall are NaN: {exc}")
    else:
        recall["pooled_recall"] = rec.pooled_recall
        recall["pooled_recall_se"] = np.sqrt(rec.pooled_recall_variance)
        if note is None:
            recall.update(recall=rec.recall, recall_se=rec.se, recall_ci_low=rec.ci_low, recall_ci_high=rec.ci_high)
            diagnostics.update(pool_recall=rec.pool_recall, pool_recall_se=math.sqrt(rec.pool_recall_variance),
                               n_exhaustive=rec.n_exhaustive)
        else:
            notes.append(note)
    for name, values in recall.items():
        frame[name] = values
    frame["n_items"] = np.array([w.n for w in drawn.weights], dtype=np.int64)
    frame["support"] = np.array([w.support for w in drawn.weights], dtype=np.int64)
    rest = [c for c in frame.columns if c not in _CONTRACT_COLUMNS]
    diagnostics["notes"] = notes
    return frame[_CONTRACT_COLUMNS + rest], diagnostics


#: The precision columns that the two-phase estimate gives for gold.
_PRECISION_COLUMNS = ["precision", "precision_se", "precision_ci_low", "precision_ci_high", "simple_precision",
                      "simple_precision_se", "simple_ci_low", "simple_ci_high"]


def estimate_audited(labeled: LabeledSample, by_verdicts: tuple[pd.DataFrame, dict], params: CompareParams) -> tuple[pd.DataFrame, dict]:
    """Every system's precision as gold says it from a complete designed gold audit
    (``labeled.two_phase``), beside the estimates as the verdicts say it (``by_verdicts``: the
    frame and diagnostics of :func:`prdist.dataflow.labels.unjudged.estimate_labeled`).

    The precision columns (joint and simple) are :func:`prdist.importance.estimate_precision_two_phase`
    with the judge's verdict as the predictor, else the store's verdict (1/2 where nobody can
    judge), plus ``gold_lambda`` and ``gold_simple_lambda``. ``verdicts_precision`` /
    ``_ci_low`` / ``_ci_high`` and the recall columns are the verdicts' estimates, leaving out the
    drawn items nobody can judge (missing at random), as the diagnostics' notes say.
    """
    if not labeled.two_phase:
        raise ParameterError("estimate_audited needs a sample certified by a complete gold audit (LabeledSample.two_phase).")
    sample = labeled.sample
    judged = ~np.isnan(sample.labels)
    frame, diagnostics = by_verdicts[0].copy(), by_verdicts[1]
    # The judge's verdict first: annotators' verdicts given only on audited keys (the task lists
    # them) would otherwise make the predictor depend on the audit, and the estimate biased.
    judge = np.full(sample.keys.size, np.nan) if labeled.judge is None else labeled.judge
    predictor = np.where(np.isnan(judge), sample.labels, judge)
    gold = estimate_precision_two_phase(sample, predictor, labeled.gold, labeled.audit, weights=params.weights,
                                        confidence=params.confidence)
    by_gold = gold.to_frame()
    frame = frame.assign(verdicts_precision=frame["precision"], verdicts_precision_ci_low=frame["precision_ci_low"],
                         verdicts_precision_ci_high=frame["precision_ci_high"])
    for name in _PRECISION_COLUMNS + ["gold_lambda", "gold_simple_lambda"]:
        frame[name] = by_gold[name].to_numpy()
    left_out = int((~judged).sum())
    diagnostics["notes"].append(
        "precision and simple_precision are for the precision as gold says it (two-phase prediction-powered estimate "
        f"from the gold audit of {gold.audited:,} of the {gold.drawn:,} drawn keys); verdicts_precision, recall and "
        "pooled_recall are as the verdicts say it" + (
            f", leaving out the {left_out:,} drawn items nobody can judge (assumed missing at random)" if left_out else "")
        + " (recall is a ratio: the audit does not correct it).")
    diagnostics["gold_audit"] = {"first_phase_variance": gold.first_phase_variance.tolist(),
                                 "second_phase_variance": gold.second_phase_variance.tolist()}
    return frame, diagnostics


# --------------------------------------------------------------------------------------------
# Run directory
# --------------------------------------------------------------------------------------------


def _sample_table(drawn: DrawnSample, sample: JointSample) -> pd.DataFrame:
    """sample.parquet: one row per (drawn key, system that outputs or drew it)."""
    present = ~np.isnan(drawn.scores) | (sample.counts > 0)
    x, j = np.nonzero(present)
    return pd.DataFrame(
        {
            "key": sample.keys[x],
            "system": np.array(sample.systems, dtype=object)[j],
            "score": drawn.scores[x, j],
            "probability": sample.probabilities[x, j],
            "draws": sample.counts[x, j],
            "label": sample.labels[x],
        }
    )


def write_compare(systems, drawn: DrawnSample, labeled: LabeledSample, params: CompareParams, *, out,
                  frame: pd.DataFrame | None = None, diagnostics: dict | None = None, labels=None,
                  exhaustive: ExhaustiveSample | None = None, storage_options=None,
                  items: Extraction | None = None) -> RunOutcome:
    """Write one comparison's run directory under ``out``, the manifest last.

    ``out`` (the runs root) and ``labels`` (the label store, named in the manifest): Locations
    resolved at the edge, or URLs (``out`` then resolved with ``storage_options``).

    Complete (every drawn item labeled): ``compare.parquet``, ``sample.parquet``, ``manifest.json``.
    Awaiting labels: ``sample.parquet``, ``annotation_task.csv`` / ``.jsonl`` (each awaiting key
    with its item columns from ``items``, see :func:`annotation_items`) and the manifest
    (``awaiting_labels: true``). The run id hashes the systems' fingerprints, the parameters, the
    exhaustive sample and the drawn items' labels: a rerun with the same inputs and labels finds
    the committed run and writes nothing; new labels make a new run.
    """
    systems = tuple(systems)
    sample = labeled.sample
    missing = labeled.missing
    if missing == 0 and frame is None:
        raise ParameterError("write_compare needs the estimates ('frame') of a fully labeled sample.")
    labels_fp = labels_fingerprint(sample.labels, labeled.cannot_judge)
    fingerprints = [[s.name, s.resource.fingerprint] for s in systems]
    exhaustive_fp = None if exhaustive is None else exhaustive.fingerprint
    # gold verdicts decide what the run certifies and reports: another run (runs without gold keep their ids)
    gold_part = [] if labeled.gold is None else [labels_fingerprint(labeled.gold)]
    if labeled.audit is not None:  # an audited key turning from awaiting to "cannot judge" is another run
        gold_part.append(labels_fingerprint(labeled.audit, labeled.gold_awaiting))
    run = RunDirectory(out, run_id("compare", fingerprints, params.to_dict(), exhaustive_fp, labels_fp, *gold_part), storage_options)
    if (reused := committed_outcome(run)) is not None:
        return reused

    run.write_table("sample.parquet", _sample_table(drawn, sample))
    task_url = None
    results = None
    if missing:
        task_url, _ = export_annotation_task(annotation_items(drawn, sample, labeled.awaiting, None if items is None else items.items,
                                                              gold_audit=labeled.gold_awaiting), run.location)
    else:
        run.write_table("compare.parquet", frame)
        results = frame[["system", "precision", "precision_ci_low", "precision_ci_high", "recall", "pooled_recall", "n_samples"]]
        results = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                   for row in results.to_dict(orient="records")]
    unknown = int(np.isnan(sample.labels).sum())
    total_draws = int(sample.counts.sum())
    manifest = {
        "status": "complete",
        "kind": "compare",
        "awaiting_labels": bool(missing),
        "run_id": run.run_id,
        "params": params.to_dict(),
        "n": {s.name: s.resource.n for s in systems},
        "systems": [
            {"name": s.name, "url": s.resource.url, "fingerprint": s.resource.fingerprint,
             "n_samples": int(n), **w.describe()}
            for s, w, n in zip(systems, drawn.weights, drawn.sizes)
        ],
        "input": {
            "url": [s.resource.url for s in systems],
            "fingerprint": run_id(fingerprints),
            "labels": None if labels is None else given_url(labels),
            "exhaustive": None if exhaustive is None else {
                "url": exhaustive.url, "fingerprint": exhaustive.fingerprint,
                "labeled": exhaustive.labeled, "correct": int(exhaustive.keys.size),
            },
        },
        "counts": {
            "annotations": int(sample.keys.size),
            "labeled": int(sample.keys.size - unknown),
            "unknown": unknown,
            "cannot_judge": int(0 if labeled.cannot_judge is None else labeled.cannot_judge.sum()),
            "disputed": labeled.disputed,
            "awaiting": int(missing),
            "draws": total_draws,
            "relabeled": labeled.relabeled,
        },
        "agreement": labeled.agreement or None,
        "certifies": labeled.certifies,
        **_gold_audit_entries(labeled, frame),
        **({"verdict_quality": labeled.verdict_quality} if labeled.verdict_quality else {}),
        "results": results,
        "diagnostics": diagnostics or {},
        "annotation_task": task_url,
        "versions": versions(),
        "timings": drawn.stats["seconds"],
        "bytes_read": {**drawn.stats["bytes_read"], "items": 0 if items is None else items.bytes_read},
        "dask": {"join_tasks": drawn.stats["join_tasks"], "buckets": drawn.stats["buckets"]},
    }
    return commit_run(run, manifest, missing, task_url)


def _gold_audit_entries(labeled: LabeledSample, frame: pd.DataFrame | None) -> dict:
    """The manifest's ``gold_audit`` (with a designed audit) and, once it certifies gold,
    ``gold_method``, the λ of every system and ``recall_certifies``."""
    record = labeled.audit_record()
    if record is None:
        return {}
    if not labeled.two_phase or frame is None:
        return {"gold_audit": record}
    record["lambda"] = dict(zip(frame["system"], frame["gold_lambda"].astype(float)))
    record["simple_lambda"] = dict(zip(frame["system"], frame["gold_simple_lambda"].astype(float)))
    return {"gold_audit": record, "recall_certifies": "verdicts",
            "gold_method": f"two-phase prediction-powered (PPI++), audit {record['gold']} of {record['drawn_keys']} keys"}
