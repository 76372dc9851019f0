"""The I/O steps of an evaluation run: open the resource, extract the planned items, write the run.

Each is one function the flow calls as one task. The numbers come from ``evaluate.py`` and the
core; this module only moves data between storage and them.
"""

from __future__ import annotations

import time
import numpy as np
import pyarrow as pa

from prdist.frames.arrays import distinct
from prdist.frames.columns import arrow_array, arrow_table, column, take_rows
from prdist.errors import DataError
from prdist.render.report import render_report
from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.run.plan_rows import PLAN_PANDAS_DTYPES, plan_table
from prdist.dataflow.ranks import exact
from prdist.dataflow.io.artifacts import (
    RunDirectory,
    RunOutcome,
    commit_run,
    committed_outcome,
    labels_fingerprint,
    run_id,
    versions,
)
from prdist.dataflow.labels.task_files import export_annotation_task
from prdist.dataflow.ranks.extract import extract
from prdist.dataflow.ranks.extraction import Extraction
from prdist.history import default_ranks
from prdist.dataflow.history import default_series, release_name, release_place
from prdist.dataflow.io.parquet import Resource, open_resource
from prdist.dataflow.io.publishing import read_parquet, write_parquet
from prdist.dataflow.io.storage import Location, resolve
from prdist.dataflow.io.storage_errors import exists

__all__ = ["committed_run", "cutoff_bounds", "exact_precision", "extract_items", "open_for_run", "read_items", "run_directory", "series_of_run", "strict_json", "write_run"]


def open_for_run(url, *, storage_options=None, key: str = "key", score: str = "score", oracle_column: str | None = None) -> Resource:
    """Open and validate the resource (schema, row counts and fingerprint from metadata).

    ``url``: its :class:`~prdist.dataflow.io.storage.Location` (resolved at the edge), or a URL and
    its ``storage_options``."""
    return open_resource(url, storage_options=storage_options, key=key, score=score, label=oracle_column)


def extract_items(resource: Resource, ranks: np.ndarray, *, client, staging: Location) -> Location:
    """Find the items at ``ranks`` and stage them as Parquet at ``staging`` (under the run's
    output, with its credentials); return ``staging``.

    Sorted input is read row group by row group, only where the ranks are; unsorted input is
    searched without a global sort. The staged file is keyed by the input fingerprint and the
    parameters and appears whole or not at all, so a rerun (after a crash, or once labels arrive)
    finds it and skips this expensive pass.
    """
    staging = resolve(staging)  # a Location as it is; a URL with the default credentials
    if exists(staging.fs, staging.path, where=staging.given):
        return staging
    started = time.perf_counter()
    # Every other column comes along, so an annotator sees the whole item.
    columns = [c for c in resource.schema.names if c not in (resource.key, resource.score, "rank", "key", "score")]
    found = extract(resource, ranks, client=client, columns=columns)
    if not np.array_equal(column(found.items, "rank"), np.asarray(ranks)):
        raise RuntimeError("extraction returned other ranks than were planned")  # an internal bug, not bad input
    # The staged file is keyed by the fingerprint taken when the resource was opened; a writer
    # replacing the release in the meantime would stage other items under it. The footers, read
    # again (no data), tell.
    again = open_resource(resource.fs.unstrip_protocol(resource.root), storage_options=resource.storage_options,
                          key=resource.key, score=resource.score, label=resource.label)
    if again.fingerprint != resource.fingerprint:
        raise DataError(
            f"{resource.url} changed while it was being read (its files or row groups differ from when it "
            "was opened). Run again on data that stays put."
        )
    table = found.items
    meta = dict(table.schema.metadata or {})
    meta[b"prdist.extract_seconds"] = f"{time.perf_counter() - started:.3f}".encode()
    meta[b"prdist.bytes_read"] = str(found.bytes_read).encode()
    write_parquet(table.replace_schema_metadata(meta), staging, exclusive=False)
    return staging


def read_items(staged: Location) -> Extraction:
    """The items staged by :func:`extract_items` at ``staged``, with the bytes and seconds the
    extraction took (recorded in the staged file's metadata)."""
    staged = resolve(staged)
    with staged.fs.open(staged.path, "rb") as fh:
        table = read_parquet(fh)
    meta = table.schema.metadata or {}
    return Extraction(table.replace_schema_metadata(None), bytes_read=int(meta.get(b"prdist.bytes_read", b"0")),
                      seconds=float(meta.get(b"prdist.extract_seconds", b"0")))


EXACT_LIMIT = 10_000_000


def exact_precision(resource: Resource, ranks: np.ndarray, items: pa.Table | None = None, *, client=None) -> pa.Table | None:
    """The exact precision at ``ranks`` from the resource's oracle column (simulations only).

    Counted in one pass over the score and label columns, the items at ``ranks`` taken from the
    extracted ``items`` where they are (:func:`prdist.dataflow.ranks.exact.exact_precision`); done for
    resources of at most ``EXACT_LIMIT`` items, None otherwise.
    """
    if resource.label is None or resource.n > EXACT_LIMIT:
        return None
    return exact.exact_precision(resource, ranks, items, client=client)


def run_directory(resource: Resource, params: ev.EvaluationParams, resolution: ev.LabelResolution, *, out: Location,
                  series: str | None = None) -> RunDirectory:
    """The directory of the run of ``resource`` under ``params`` with these labels in ``series``.

    Its id hashes what decides the run's numbers and what its manifest reports: the resource's
    fingerprint, the parameters, the labels, the label counts and the annotators' agreement (so a
    store with other annotators behind the same verdicts is another run, whose manifest says so),
    and the series. The series joins the hash only when it is not the default
    (:func:`series_of_run`), so a run given its default series, or none, keeps its id.
    """
    parts = [resource.fingerprint, params.to_dict(), labels_fingerprint(resolution.labels, resolution.kinds),
             {"counts": resolution.to_dict(), "agreement": resolution.agreement or None}]
    if resolution.audit is not None:  # the gold verdicts decide the bounds too
        parts.append(labels_fingerprint(np.where(resolution.audit, resolution.gold, np.nan), resolution.gold_kinds))
    if series_of_run(resource, series) != default_series(resource.url):
        parts.append({"series": series})
    return RunDirectory(out, run_id(*parts))


def series_of_run(resource: Resource, series: str | None) -> str:
    """The series a run of ``resource`` belongs to: ``series`` when given, else the URL's parent."""
    return default_series(resource.url) if series is None else series


def committed_run(resource: Resource, params: ev.EvaluationParams, *, out: Location, labels: Location | None,
                  series: str | None = None) -> RunOutcome | None:
    """The committed run these inputs make, found without a cluster or an orchestrator; None if there is none.

    ``out`` (the runs root) and ``labels`` (the label store) are resolved at the edge, each with
    its own credentials (:func:`prdist.dataflow.io.storage.run_locations`).

    The extraction is staged keyed by the input fingerprint and the parameters: its items give the
    keys whose labels (looked up now) complete the run id. No staged items, no run.
    """
    staging = ev.staging_url(resolve(out), resource, params)
    if not staging.fs.exists(staging.path):
        return None
    items = read_items(staging).items
    planned = ev.with_judge_audit(ev.make_plan(resource.n, params), items, params)
    resolution = ev.resolve_labels(items, oracle_column=params.oracle_column, store=labels,
                                   rule=params.aggregate, judge_column=params.judge_column,
                                   audit=planned.in_audit)
    run = run_directory(resource, params, resolution, out=out, series=series)
    return committed_outcome(run)


def write_run(resource: Resource, planned: ev.PlannedRanks, extraction: Extraction, resolution: ev.LabelResolution, estimate: ev.Estimate, params: ev.EvaluationParams, *, out: Location, bands: ev.ArmBands | None, exact: pa.Table | None = None,
              series: str | None = None) -> RunOutcome:
    """Write plan, bounds, (bands, exact), report and, last, the manifest of one run of ``series``."""
    out = resolve(out)
    run = run_directory(resource, params, resolution, out=out, series=series)
    if (reused := committed_outcome(run)) is not None:
        return reused

    items = extraction.items
    plan = plan_table(planned, items, resolution.labels, resolution.kinds, resolution.gold, resolution.judge)
    run.write_table("plan.parquet", plan, pandas_dtypes=PLAN_PANDAS_DTYPES)
    run.write_table("bounds.parquet", estimate.bounds)
    if bands is not None:
        write_parquet(bands.to_arrow(), run.path_of("bands.parquet"), storage_options=run.storage_options, exclusive=False)
    if exact is not None:
        run.write_table("exact.parquet", exact)
    cutoffs = _cutoff_table(estimate, items, planned)
    awaiting = resolution.awaiting
    missing = int(awaiting.sum())  # cannot-judge items are never requested again
    task_url = None
    if missing:
        export = items.drop_columns([c for c in [params.oracle_column] if c in items.column_names])
        if planned.in_audit is not None:  # which rows want a gold verdict (import them with --role gold)
            export = export.append_column("gold_audit", arrow_array(np.asarray(resolution.gold_awaiting, dtype=bool)))
        export = take_rows(export, np.flatnonzero(awaiting))
        task_url, _ = export_annotation_task(export, run.location)
    manifest = {
        "status": "awaiting labels" if missing else "complete",
        "awaiting_labels": bool(missing),
        "run_id": run.run_id,
        "series": series_of_run(resource, series),
        # Where the release stands in its series, fixed now (the history orders by it, wherever the
        # run is copied): not part of the run id, as a run id names one run of one root, whose place
        # it keeps.
        "release": {"place": release_place(out, series_of_run(resource, series), resource.fingerprint),
                    "name": release_name(resource.url)},
        "params": params.to_dict(),
        "n": resource.n,
        "counts": resolution.to_dict(),
        "agreement": resolution.agreement or None,
        **_known_quality(resolution, estimate, planned),
        "input": {"url": resource.url, "fingerprint": resource.fingerprint, "sorted": resource.is_sorted_claim(), "bytes_read": extraction.bytes_read},
        "diagnostics": estimate.diagnostics,
        "ap_bounds": list(estimate.average_precision) if estimate.average_precision else None,
        "cutoffs": cutoffs.to_pylist(),
        "annotation_task": task_url,
        "bands": bands.to_dict() if bands is not None else None,
        "exact": exact is not None,
        "versions": versions(),
        "timings": {"extract_seconds": extraction.seconds},
    }
    manifest = strict_json(manifest)
    html = render_report(manifest=manifest, bounds=estimate.bounds, plan=plan, bands=None if bands is None else bands.table, cutoffs=cutoffs, exact=exact)
    run.write_bytes("report.html", html.encode("utf-8"))
    return commit_run(run, manifest, missing, task_url, cutoffs=dict(estimate.cutoff_ranks))


def _known_quality(resolution: ev.LabelResolution, estimate: ev.Estimate, planned: ev.PlannedRanks) -> dict:
    """The manifest's ``certifies`` and, for a run with a gold audit, ``verdict_quality``."""
    out = {"certifies": estimate.certifies}
    if resolution.audit is not None:
        out["verdict_quality"] = resolution.verdict_quality(planned)
    return out


def _cutoff_table(estimate: ev.Estimate, items: pa.Table, planned: ev.PlannedRanks) -> pa.Table:
    """Deepest guaranteed cut-off per target.

    ``score`` is that of the deepest planned item at or above the cut-off rank: keeping the items
    scored at least that high keeps the guarantee (ties aside), without another pass over the
    resource.
    """
    rows = []
    scores = column(items, "score", np.float64)
    for target, rank in sorted(estimate.cutoff_ranks.items(), reverse=True):
        pos = np.searchsorted(planned.ranks, rank, side="right") - 1
        rows.append({"target": float(target), "rank": int(rank), "score": float(scores[pos]) if rank > 0 else float("nan")})
    return arrow_table({"target": np.array([r["target"] for r in rows], dtype=np.float64),
                        "rank": np.array([r["rank"] for r in rows], dtype=np.int64),
                        "score": np.array([r["score"] for r in rows], dtype=np.float64)})


def strict_json(value):
    """``value`` with every non-finite float replaced by None, so that the manifest is strict JSON
    (no bare NaN / Infinity, which strict parsers refuse).

    Examples
    --------
    >>> strict_json({"a": [1.0, float("nan")], "b": {"c": float("inf")}, "d": "x"})
    {'a': [1.0, None], 'b': {'c': None}, 'd': 'x'}
    """
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def cutoff_bounds(estimate: ev.Estimate, n: int) -> pa.Table:
    """The bounds at the ranks a reader follows: the guaranteed cut-offs and the powers of ten.

    PAULA's bounds are taken at exactly those ranks; a sampling baseline's at the deepest rank of
    its table at or above each (its intervals hold at their own ranks only), so ``rank`` always
    says where a row's bounds hold. ``target`` names the precision target a cut-off rank meets.
    """
    wanted = default_ranks([r for r in estimate.cutoff_ranks.values()], n)
    if estimate.paula is not None:
        rows = arrow_table({"rank": wanted, "precision_lower": estimate.paula.lower(wanted), "precision_upper": estimate.paula.upper(wanted)})
    else:
        table = estimate.bounds.select(["rank", "precision_lower", "precision_upper"])
        at = np.clip(np.searchsorted(column(table, "rank"), wanted, side="right") - 1, 0, len(table) - 1)
        rows = take_rows(table, distinct(at))
    targets = {int(rank): float(t) for t, rank in sorted(estimate.cutoff_ranks.items()) if rank > 0}
    target = np.array([targets.get(int(r), np.nan) for r in column(rows, "rank")], dtype=np.float64)
    return rows.add_column(1, "target", arrow_array(target, mask=np.isnan(target)))
