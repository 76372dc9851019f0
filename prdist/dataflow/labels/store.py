"""The label store: append-only Parquet records of verdicts, shared by every release and system.

One human verdict serves every resource that contains the item, so labels live apart from runs
and resources. Each import appends one new Parquet file (a create-only write, so concurrent imports
never overwrite each other) holding one record per verdict: ``key, label, source, annotator,
time``, where ``label`` is 1 (correct), 0 (incorrect) or -1 (cannot judge) and ``time`` is when
the annotator gave it (the import time when the tool does not say). Keys are stored as text (an
integer key 42 is stored as "42"), which makes the store independent of how each resource types
its key column. Stores written before verdicts had annotators (key, label 0/1) read unchanged.

A key's verdict comes from all its records by a stated rule (:func:`prdist.verdicts.aggregation.aggregate`):
by default the majority of each annotator's latest verdict, a tie being "disputed". Records from
one anonymous annotator reduce to "the latest import wins" (a correction); keys whose records
disagree are counted, so that disagreement is visible, never silent.

Files are imported by :mod:`prdist.dataflow.labels.importer`; annotation tasks are written by
:mod:`prdist.dataflow.labels.task`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa

from prdist.dataflow.io.storage import given_url, resolve
from prdist.dataflow.io.storage_errors import exists, storage_errors
from prdist.errors import DataError
from prdist.verdicts.roles import RoleVerdicts, role_verdicts, split_roles
from prdist.verdicts.aggregation import CANNOT_JUDGE, Agreement, Outcomes, aggregate, agreement

__all__ = [
    "STORE_SCHEMA",
    "LabelLookup",
    "StoreRecords",
    "keys_missing_from",
    "lookup_labels",
    "normalise_keys",
    "read_store",
    "role_status",
    "store_exists",
    "store_outcomes",
    "store_status",
    "store_verdicts",
    "whole_store",
    "with_judges",
]

STORE_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("label", pa.int8()),
        ("source", pa.string()),
        ("annotator", pa.string()),
        ("time", pa.timestamp("us", tz="UTC")),
        ("role", pa.string()),  # judge30: annotator / judge / gold (prdist.verdicts.roles); null in older stores
    ]
)


def normalise_keys(keys) -> pd.Series:
    """Item keys as text, the form the label store uses (integers in decimal)."""
    s = pd.Series(keys)
    if s.dtype.kind in "iu":
        return s.astype(str)  # any width, in decimal as it is (no wrap of unsigned keys >= 2^63)
    if s.dtype.kind == "f":
        if not np.all(np.isfinite(s)) or not np.all(s == np.floor(s)):
            raise DataError("Item keys must be integers or text; found fractional or missing numeric keys.")
        return s.astype("int64").astype(str)
    return s.astype(str)

def keys_missing_from(resource: str, keys, *, storage_options=None, key: str = "key", score: str = "score") -> tuple[str, list[str]]:
    """Return (the resource's printable URL, the ``keys`` it does not hold, as text).

    Reads the key column of the Parquet resource at ``resource`` once, one row group at a time.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.9, 0.5, 0.1]}), os.path.join(d, "a.parquet"))
    >>> keys_missing_from(d, [3, 4, 5])[1]
    ['4', '5']
    """
    from prdist.dataflow.io.parquet import displays, open_resource
    from prdist.dataflow.io.parquet_tasks import keys_of, read_row_groups

    opened = open_resource(resource, storage_options=storage_options, key=key, score=score)
    wanted = pd.Index(normalise_keys(keys).unique())
    held = np.zeros(len(wanted), dtype=bool)
    names = displays(opened)
    for part in opened.partitions():
        display = names[part.path]
        for index, table in read_row_groups(opened.fs, part.path, part.indices, [key], display=display,
                                            footer=part.footer):
            held |= wanted.isin(normalise_keys(keys_of(table, key, f"{display} row group {index}")))
    return opened.url, wanted[~held].tolist()


@dataclass(frozen=True, eq=False)
class LabelLookup:
    """The verdicts the store holds for a set of keys, aggregated by one rule."""

    labels: pd.Series  # float64 indexed by key text: 1 / 0, NaN where unknown (any reason)
    kinds: pd.Series  # indexed by key text: correct / incorrect / cannot_judge / disputed / missing
    relabeled: int = 0  # keys whose records disagree (across annotators or corrections)
    examples: tuple[str, ...] = field(default=())
    agreement: Agreement = field(default_factory=lambda: Agreement(None, 0, 0))
    rule: str = "majority"
    fitted_on: dict | None = None  # the store a store-wide model (dawid-skene) was fitted on
    # judge30: verdicts by role (prdist.verdicts.roles). ``labels`` / ``kinds`` hold the judges'
    # verdict where no annotator gave one (``judged`` True there); gold stays apart.
    judged: pd.Series | None = None  # bool per key
    roles: RoleVerdicts | None = None

    @property
    def missing(self) -> int:
        return int(self.labels.isna().sum())

    def agreement_record(self) -> dict:
        """The manifest's "agreement": alpha over the looked-up keys, the rule and, for a
        store-wide model, what it was fitted on (:meth:`StoreRecords.scope`)."""
        extra = {} if self.fitted_on is None else {"fitted_on": self.fitted_on}
        return dict(self.agreement.to_dict(), rule=self.rule, **extra)


@dataclass(frozen=True, eq=False)
class StoreRecords:
    """Every record of a store as one read found it, and the outcomes aggregated from them."""

    records: pd.DataFrame  # key, verdict, annotator, time, role
    files: int
    fingerprint: str  # of the store's file names and sizes: its files are create-only
    outcomes: dict = field(default_factory=dict, repr=False)  # rule -> Outcomes, filled by store_outcomes

    @cached_property
    def by_role(self) -> dict[str, pd.DataFrame]:
        """The records of each role (:func:`prdist.verdicts.roles.split_roles`): only the
        annotators' are voted; judges and gold stand apart."""
        return split_roles(self.records)

    def scope(self) -> dict:
        """What a store-wide model was fitted on (the annotators' records), as the run's manifest records it."""
        voted = self.by_role["annotator"]
        return {"records": int(len(voted)), "keys": int(voted["key"].nunique()),
                "annotators": int(voted["annotator"].nunique()), "files": self.files,
                "fingerprint": self.fingerprint}


# The last store read whole, with its outcomes by rule: one command fits a store-wide model once,
# however many lookups it makes. Keyed by the store's URL and fingerprint, so an import in between
# (a new file) is never answered from it.
_LAST_STORE: dict = {}


def _store_listing(store, storage_options=None):
    """(filesystem, [(path, size)] of the store's Parquet files sorted by path), or None when the
    store certainly does not exist. ``store``: its Location, or a URL and its options."""
    at = resolve(store, storage_options=storage_options)
    fs, path, store = at.fs, at.path, at.given
    # Only a store that is certainly absent holds no labels: an outage must never read as "no labels".
    if not exists(fs, path, where=store):
        return None
    with storage_errors(store, action="list"):
        found = fs.find(path, detail=True)
    return fs, sorted((name, int(info.get("size") or 0)) for name, info in found.items() if name.endswith(".parquet"))


def store_exists(store: str, *, storage_options=None) -> bool:
    """Whether a label store is at ``store`` (an existing directory may be empty)."""
    return _store_listing(store, storage_options) is not None


def read_store(store: str | None, keys=None, *, storage_options=None) -> pd.DataFrame:
    """The store's records (key, label, source, annotator, time, role), only those of ``keys`` if given.

    Only the rows whose key is asked for are materialised (a filtered Parquet scan). A store that
    does not exist yet holds no records. ``label`` is 1, 0 or -1 (cannot judge).
    """
    listing = None if store is None else _store_listing(store, storage_options)
    return _read_listing(None if store is None else given_url(store), listing, keys)


def _read_listing(store, listing, keys=None, columns=tuple(STORE_SCHEMA.names)) -> pd.DataFrame:
    if not listing or not listing[1]:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
    fs, files = listing
    import pyarrow.dataset as ds  # here: 13 ms, which a run without a label store does without

    try:
        with storage_errors(store, action="read"):
            dataset = ds.dataset([name for name, _ in files], schema=STORE_SCHEMA, format="parquet", filesystem=fs)
            where = None if keys is None else ds.field("key").isin(pa.array(pd.Index(keys).to_numpy(dtype=object), pa.string()))
            found = dataset.to_table(columns=list(columns), filter=where).to_pandas()
    except pa.ArrowException as exc:
        raise DataError(f"The label store {store!r} holds an unreadable file ({exc}). Move the damaged file aside.") from None
    found["annotator"] = found["annotator"].fillna("")
    found["role"] = found["role"].fillna("annotator")  # judge30: records from before roles are annotators'
    return found


def whole_store(store: str | None, *, storage_options=None) -> StoreRecords:
    """Every record of the store, read once per command (the last store read is kept)."""
    listing = None if store is None else _store_listing(store, storage_options)
    store = None if store is None else given_url(store)
    files = [] if listing is None else listing[1]
    fingerprint = hashlib.sha256("\n".join(f"{PurePosixPath(n).name}\t{size}" for n, size in files).encode()).hexdigest()[:16]
    if (cached := _LAST_STORE.get((store, fingerprint))) is not None:
        return cached
    # Without "source": nothing aggregated needs it, and it is a string per record.
    records = _read_listing(store, listing, columns=("key", "label", "annotator", "time", "role")).rename(columns={"label": "verdict"})
    _LAST_STORE.clear()
    entry = _LAST_STORE[store, fingerprint] = StoreRecords(records, files=len(files), fingerprint=fingerprint)
    return entry


def store_outcomes(store: StoreRecords, rule: str) -> Outcomes | None:
    """One outcome per key of the whole store by ``rule`` (None for an empty store), computed once
    per store read: a store-wide model is fitted on every record, whoever asks."""
    voted = store.by_role["annotator"]
    if not len(voted):
        return None
    if rule not in store.outcomes:
        store.outcomes[rule] = aggregate(voted, rule)
    return store.outcomes[rule]


def store_verdicts(keys, store, *, storage_options=None, rule: str = "majority") -> tuple:
    """The verdicts of ``store`` for ``keys`` (an item's each), aggregated by ``rule``: per key the
    label, the kind, whether a judge gave it, the stored judge's verdict; then the keys relabeled,
    the manifest's agreement record, and per key the gold verdict and its kind (what
    :func:`prdist.dataflow.run.evaluate.resolve_labels` takes of a store)."""
    lookup = lookup_labels(store, keys, storage_options=storage_options, rule=rule)
    keys = normalise_keys(keys)
    return (lookup.labels.reindex(keys).to_numpy(dtype=np.float64, copy=True),
            lookup.kinds.reindex(keys).fillna("missing").to_numpy(dtype=object, copy=True),
            lookup.judged.reindex(keys).to_numpy(dtype=bool, copy=True),
            lookup.roles.judge.reindex(keys).to_numpy(dtype=np.float64), lookup.relabeled, lookup.agreement_record(),
            lookup.roles.gold.reindex(keys).to_numpy(dtype=np.float64),
            lookup.roles.gold_kinds.reindex(keys).fillna("missing").to_numpy(dtype=str))


def lookup_labels(store: str | None, keys, *, storage_options=None, rule: str = "majority") -> LabelLookup:
    """Look up the verdict of every key by ``rule``.

    ``majority`` and ``latest`` decide each key from its own records, so only the records of
    ``keys`` are read (a filtered scan). ``dawid-skene`` learns every annotator's accuracy from the
    whole store, so the store is read whole and the model fitted on all of it, once per command
    (:func:`whole_store`): a key gets the same verdict whichever keys a command asks about.
    """
    wanted = pd.Index(normalise_keys(keys).unique())
    fitted_on = None
    if rule == "dawid-skene":
        whole = whole_store(store, storage_options=storage_options)
        by_role = {role: frame[frame["key"].isin(wanted)] for role, frame in whole.by_role.items()}
        outcomes = store_outcomes(whole, rule)
        fitted_on = whole.scope() if outcomes is not None else None
    else:
        by_role = split_roles(read_store(store, wanted, storage_options=storage_options).rename(columns={"label": "verdict"}))
        outcomes = aggregate(by_role["annotator"], rule) if len(by_role["annotator"]) else None
    records = by_role["annotator"]  # judge30: only annotators' records are voted
    if outcomes is None or not len(records):
        lookup = LabelLookup(labels=pd.Series(np.nan, index=wanted, dtype=np.float64),
                             kinds=pd.Series("missing", index=wanted, dtype=object), rule=rule, fitted_on=fitted_on)
    else:
        found = outcomes.for_keys(wanted)
        disagree = records.groupby("key")["verdict"].nunique()
        disagree = disagree[disagree > 1]
        lookup = LabelLookup(labels=found["label"].astype(np.float64), kinds=found["kind"], relabeled=len(disagree),
                             examples=tuple(disagree.index[:5]), agreement=agreement(records), rule=rule, fitted_on=fitted_on)
    return with_judges(lookup, role_verdicts(by_role, wanted))  # judge30


def with_judges(lookup: LabelLookup, roles: RoleVerdicts) -> LabelLookup:
    """``lookup`` with the judges' verdict standing for every key that no annotator judged, and
    the gold verdicts kept beside (:mod:`prdist.verdicts.roles`)."""
    judged = (lookup.kinds == "missing") & roles.judge.notna()
    labels = lookup.labels.where(~judged, roles.judge)
    kinds = lookup.kinds.where(~judged, np.where(roles.judge == 1, "correct", "incorrect"))
    return replace(lookup, labels=labels, kinds=kinds, judged=judged, roles=roles)

def store_status(store: str, *, resource: str | None = None, rule: str = "majority", storage_options=None,
                 key: str = "key", score: str = "score") -> dict:
    """What the store holds, as ``labels status --json`` prints it.

    Keys: store, rule, items, records, verdicts (outcomes by kind), annotators (name -> records),
    annotator_verdicts (name -> records by verdict: correct, incorrect, cannot_judge),
    disagreeing_keys (keys whose records disagree: across annotators or one annotator's
    corrections), agreement, disputed_keys (a list) and, for a store-wide model, fitted_on. With
    ``resource``, only its keys are counted; their verdicts are still those of the whole store
    (:func:`lookup_labels`).
    """
    whole = whole_store(store, storage_options=storage_options)
    outcomes = store_outcomes(whole, rule)
    records = whole.records
    table = outcomes.table if outcomes is not None else pd.DataFrame({"kind": pd.Series(dtype=object)})
    if resource is not None and len(records):
        _, outside = keys_missing_from(resource, records["key"].unique(), storage_options=storage_options, key=key, score=score)
        records = records[~records["key"].isin(outside)]
        table = table[~table.index.isin(outside)]
    by_role = split_roles(records)  # judge30: the verdicts below are the annotators'; judges and gold apart
    roles = role_status(by_role)
    records = by_role["annotator"]
    kinds = {k: 0 for k in ("correct", "incorrect", "cannot_judge", "disputed")}
    kinds.update(table["kind"].value_counts().to_dict())
    named = records["verdict"].map({1: "correct", 0: "incorrect", CANNOT_JUDGE: "cannot_judge"})
    by_verdict = pd.crosstab(records["annotator"], named).reindex(columns=["correct", "incorrect", "cannot_judge"], fill_value=0)
    status = {
        "store": store,
        "rule": rule,
        "items": int(records["key"].nunique()),
        "records": int(len(records)),
        "verdicts": {k: int(v) for k, v in kinds.items()},
        "annotators": {str(a): int(n) for a, n in records["annotator"].value_counts().sort_index().items()},
        "annotator_verdicts": {str(a): {k: int(v) for k, v in row.items()} for a, row in by_verdict.sort_index().iterrows()},
        "disagreeing_keys": int((records.groupby("key")["verdict"].nunique() > 1).sum()),
        "agreement": agreement(records).to_dict() if len(records) else Agreement(None, 0, 0).to_dict(),
        "disputed_keys": [str(k) for k in table.index[table["kind"].to_numpy() == "disputed"]],
        **roles,
    }
    if rule == "dawid-skene" and outcomes is not None:
        status["fitted_on"] = whole.scope()
    return status


def role_status(by_role: dict[str, pd.DataFrame]) -> dict:
    """Records and items per role, and the judges' quality against gold on the keys both judged."""
    counts = {role: {"records": int(len(frame)), "items": int(frame["key"].nunique())} for role, frame in by_role.items()}
    keys = pd.Index(by_role["gold"]["key"].unique())
    if not len(keys) or not len(by_role["judge"]):
        return {"roles": counts, "judge_quality": None}
    from prdist.verdicts.known_quality import verdict_quality

    verdicts = role_verdicts(by_role, keys)
    return {"roles": counts, "judge_quality": verdict_quality(verdicts.judge.to_numpy(), verdicts.gold.to_numpy()).to_dict()}
