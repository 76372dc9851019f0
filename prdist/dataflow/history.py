"""The history of a series of releases, read from committed run directories.

Reads only what is cheap on any store: every ``<runs>/<run_id>/manifest.json`` and, for the runs
kept, their ``plan.parquet`` (the planned ranks and their labels, some thousands of rows). Each
release's bounds are recomputed from those labels at the confidence its place in the series gets
(:func:`prdist.history.release_confidence`), with the same :func:`~prdist.dataflow.run.evaluate.estimate`
the run used, so a run's history row and its own bounds come from one function. Runs in this
process; no cluster, no Prefect.

A release's place is recorded in its run's manifest (``release.place``) when the run is made
(:func:`release_place`): one more than the last place of the series under the run's ``--out``,
or the place of an earlier run of the same release. The history orders releases by that
recorded place, so copying runs to another root, or deleting others, moves no release and
changes no release's error budget. Runs made before places were recorded (no ``release`` entry)
take the places after the last recorded one, in the order their manifests were written; two
releases recorded at one place (runs made at the same moment) are kept apart, the later one
taking the next free place, so no two releases ever share an error budget.

A release whose run certifies gold (a complete gold audit) is bounded again from the gold
verdicts and the judge's or the verdicts' values that ``plan.parquet`` keeps, by the same
:func:`~prdist.verdicts.known_quality.gold_bounds`; ``history.parquet`` says per row what the bounds
certify, and no change is claimed between releases that certify different things. The judge's
agreement with gold per release, and where it drifts (:func:`prdist.history.judge_drift`), is
``judge_quality.parquet``, written for series with such releases (:data:`JUDGE_COLUMNS`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import posixpath
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    import pandas as pd

from prdist.errors import DataError, InputError, ParameterError
from prdist.params import RANK
from prdist.history import (
    JudgeRates,
    certain_changes,
    default_ranks,
    judge_drift,
    judge_rates,
    release_confidence,
)
from prdist.input_gate import expect, json_document, refusal
from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.io.artifacts import MANIFEST
from prdist.dataflow.io.publishing import publish, write_parquet
from prdist.dataflow.io.storage import filesystem, join_url, modified_time, resolve
from prdist.dataflow.io.storage_errors import info_or_none

__all__ = ["HISTORY_COLUMNS", "JUDGE_COLUMNS", "DamagedRunWarning", "judge_table", "RunRecord", "default_series", "history_table", "newest_changes",
           "placed_releases", "read_judge_quality", "read_runs", "default_out", "readable_run", "release_name", "release_place", "series_of", "write_history"]

INT64_MAX = (1 << 63) - 1
HISTORY_COLUMNS = ("series", "place", "release", "run_id", "resource", "created", "n", "rank", "precision_lower", "precision_upper",
                   "change", "certifies")
JUDGE_COLUMNS = ("series", "place", "release", "run_id", "certifies", "compared", "sensitivity", "sensitivity_lower",
                 "sensitivity_upper", "specificity", "specificity_lower", "specificity_upper", "kappa", "confidence", "drift")


@dataclass(frozen=True)
class RunRecord:
    """One committed evaluation run: where it is, what it evaluated, and when it was committed."""

    url: str
    manifest: dict
    created: pd.Timestamp

    @property
    def series(self) -> str:
        return series_of(self.manifest)

    @property
    def release(self) -> str:
        return self.manifest["input"]["fingerprint"]

    @property
    def recorded_place(self) -> int | None:
        """The place in its series recorded when the run was made (None for runs made before)."""
        place = (self.manifest.get("release") or {}).get("place")
        return int(place) if place is not None else None

    @property
    def certifies(self) -> str:
        """What the run's bounds hold for: "gold" (a complete gold audit) or "verdicts"."""
        return "gold" if self.manifest.get("certifies") == "gold" else "verdicts"

    @property
    def judge_counts(self) -> dict | None:
        """The judge's agreement counts with gold on the run's audit (None without a judge and gold)."""
        found = (self.manifest.get("verdict_quality") or {}).get("judge")
        return found if isinstance(found, dict) and found.get("compared") else None

    @property
    def release_name(self) -> str:
        """The release's name on the history page: the last part of its resource URL."""
        return release_name(self.manifest["input"]["url"])


def release_name(resource_url: str) -> str:
    """A release's short name: the last part of its resource URL.

    Examples
    --------
    >>> release_name("s3://kb/releases/2026-08/")
    '2026-08'
    """
    return posixpath.basename(str(resource_url).rstrip("/")) or str(resource_url)


def default_series(resource_url: str) -> str:
    """The series of a run not given one: its resource URL's parent (releases side by side).

    Examples
    --------
    >>> default_series("s3://kb/releases/2026-08/")
    's3://kb/releases'
    """
    return posixpath.dirname(str(resource_url).rstrip("/")) or "."


def series_of(manifest: dict) -> str:
    """The series a run belongs to: the one its manifest records, else its resource URL's parent."""
    named = manifest.get("series")
    if named:
        return str(named)
    return default_series(manifest["input"]["url"])


def read_runs(runs, *, storage_options=None) -> tuple[list[RunRecord], int]:
    """Every committed PAULA evaluation under ``runs``, oldest first; and how many runs were passed over.

    Comparisons and the sampling baselines have no bounds at every rank to follow, so they are
    passed over (and counted); so are runs of older versions whose parameters this one refuses
    (``--confidence none`` with ``--bands``: bounds and bands at no common level), which it
    cannot bound again.
    """
    at = resolve(runs, storage_options=storage_options)  # a Location passes as it is
    fs, root, runs = at.fs, at.path, at.given
    info = info_or_none(fs, root, where=runs)
    if info is None or info.get("type") != "directory":
        raise InputError(f"No run directory root at {runs}. Name the --out of your prdist run commands.")
    records, skipped, damaged = [], 0, []
    for path in sorted(fs.glob(posixpath.join(root, "*", MANIFEST))):
        manifest = readable_run(fs, path)
        if manifest is None:
            damaged.append(posixpath.basename(posixpath.dirname(path)))
            continue
        if manifest.get("params", {}).get("method") != "paula" or "input" not in manifest or not _rebounded(manifest):
            skipped += 1
            continue
        run_url = join_url(runs, posixpath.basename(posixpath.dirname(path)))
        records.append(RunRecord(run_url, manifest, modified_time(fs.info(path))))
    records.sort(key=lambda r: (r.created, r.manifest["run_id"]))
    if damaged:
        shown = ", ".join(damaged[:5]) + (f" and {len(damaged) - 5} more" if len(damaged) > 5 else "")
        warnings.warn(DamagedRunWarning(
            f"{len(damaged)} run director{'y' if len(damaged) == 1 else 'ies'} under {runs} skipped, damaged (a manifest.json "
            f"or plan.parquet that cannot be read as a run's): {shown}. Move them aside or run their commands again."), stacklevel=2)
    return records, skipped


class DamagedRunWarning(UserWarning):
    """A run directory under a runs root that cannot be read (a truncated or non-JSON manifest, a
    damaged plan): history skips it, and names it in one warning."""


def readable_run(fs, manifest_path: str) -> dict | None:
    """The manifest of the run directory of ``manifest_path`` if the run can be read: a JSON object
    with the fields history uses and, for a PAULA run, a plan whose Parquet footer reads; else None."""
    import pyarrow.parquet as pq

    try:
        with fs.open(manifest_path, "rb") as fh:
            manifest = json_document(fh.read().decode("utf-8"), manifest_path)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("params", {}), dict):
            return None
        if manifest.get("params", {}).get("method") == "paula" and "input" in manifest:
            _check_fields(manifest, manifest_path)
            with fs.open(posixpath.join(posixpath.dirname(manifest_path), "plan.parquet"), "rb") as fh:
                pq.read_metadata(fh)
    except (ValueError, KeyError, TypeError, OSError, pa.ArrowException):  # DataError is a ValueError
        return None
    return manifest


def _check_fields(manifest: dict, origin: str) -> None:
    """Refuse (:func:`prdist.input_gate.expect`) a manifest whose fields history reads have
    another type or range than a run writes: input url and fingerprint, n, run id, series,
    recorded place and cut-offs."""
    fix = "the run directory is damaged; run the release again"
    source = expect(manifest["input"], dict, origin, "field 'input'", fix)
    for name in ("url", "fingerprint"):
        expect(source[name], str, origin, f"field 'input.{name}'", fix)
    expect(manifest["run_id"], str, origin, "field 'run_id'", fix)
    expect(manifest.get("series") or "", str, origin, "field 'series'", fix)
    place = expect(manifest.get("release") or {}, dict, origin, "field 'release'", fix).get("place")
    for name, value in (("n", manifest["n"]), ("release.place", 1 if place is None else place)):
        if not 1 <= expect(value, int, origin, f"field {name!r}", fix) <= INT64_MAX:
            raise refusal(origin, f"field {name!r}", f"{value} is out of range", fix)
    for cutoff in expect(manifest.get("cutoffs", []), list, origin, "field 'cutoffs'", fix):
        expect(expect(cutoff, dict, origin, "field 'cutoffs'", fix).get("rank"), int, origin, "field 'cutoffs.rank'", fix)


def _latest_per_release(records: list[RunRecord]) -> list[RunRecord]:
    """A release evaluated again (labels arrived) counts once, by its latest run, at its first place."""
    latest = {}
    for record in records:
        latest[record.release] = record
    seen, out = set(), []
    for record in records:
        if record.release not in seen:
            seen.add(record.release)
            out.append(latest[record.release])
    return out


def placed_releases(records: list[RunRecord]) -> list[tuple[RunRecord, int]]:
    """The releases of one series with their places, first place first (see the module notes).

    Each release by its latest run; ordered by recorded place (runs without one after, in the
    order their manifests were written); a place already taken moves to the next free one.
    """
    unplaced = float("inf")
    ordered = sorted(records, key=lambda r: (r.recorded_place or unplaced, r.created, r.manifest["run_id"]))
    out, last = [], 0
    for record in _latest_per_release(ordered):
        recorded = record.recorded_place
        last = recorded if recorded is not None and recorded > last else last + 1
        out.append((record, last))
    return out


def release_place(runs, series: str, fingerprint: str, *, storage_options=None) -> int:
    """The place in ``series`` of a new run of the release ``fingerprint`` under ``runs``.

    The place of an earlier run of the same release when there is one (a release evaluated
    again keeps its place), else one more than the last place of the series (1 for the first).
    """
    try:
        records, _ = read_runs(runs, storage_options=storage_options)
    except InputError:  # no root yet: the first run of every series
        return 1
    placed = placed_releases([r for r in records if r.series == series])
    for record, place in placed:
        if record.release == fingerprint:
            return place
    return placed[-1][1] + 1 if placed else 1


def _rebounded(manifest: dict) -> bool:
    """Whether this version can bound the run of ``manifest`` again (it accepts its parameters)."""
    try:
        _params(manifest)
    except ParameterError:
        return False
    return True


def _params(manifest: dict) -> ev.EvaluationParams:
    known = {f.name for f in dataclasses.fields(ev.EvaluationParams)}
    given = {k: v for k, v in manifest["params"].items() if k in known}
    if "targets" in given:
        given["targets"] = tuple(given["targets"])
    return ev.EvaluationParams(**given)


def _bounds_at(record: RunRecord, place: int, ranks: np.ndarray, storage_options) -> tuple[np.ndarray, np.ndarray]:
    """The run's precision bounds at ``ranks`` (NaN past its size), at its place's confidence."""
    params = _params(record.manifest)
    if params.confidence is not None:
        params = dataclasses.replace(params, confidence=release_confidence(params.confidence, place))
    n = int(record.manifest["n"])
    planned = ev.make_plan(n, params)
    plan = _plan_columns(record, storage_options)
    if not np.array_equal(plan["rank"].to_numpy(), planned.ranks):
        raise DataError(f"{record.url}/plan.parquet does not hold the ranks its manifest's parameters plan; the run was altered.")
    bounds = _rebound(planned, plan, params, record.certifies)
    lower, upper = np.full(ranks.size, np.nan), np.full(ranks.size, np.nan)
    inside = ranks <= n
    lower[inside], upper[inside] = bounds.lower(ranks[inside]), bounds.upper(ranks[inside])
    return lower, upper


def _plan_columns(record: RunRecord, storage_options) -> pd.DataFrame:
    """The plan's ranks and labels, and for a run certifying gold its gold (and judge) columns."""
    import pandas as pd  # the history's tables; a run loads no pandas

    import pyarrow.parquet as pq

    fs, path = filesystem(join_url(record.url, "plan.parquet"), storage_options)
    with fs.open(path, "rb") as fh:
        names = pq.read_schema(fh).names
        wanted = ["rank", "label"] + ([c for c in ("gold", "judge", "audit_class") if c in names] if record.certifies == "gold" else [])
        fh.seek(0)
        return pd.read_parquet(fh, columns=wanted)


def _rebound(planned: ev.PlannedRanks, plan: pd.DataFrame, params: ev.EvaluationParams, certifies: str):
    """The run's bounds again, with ``params`` (its place's confidence): the gold bounds for a run
    that certifies gold, from the values plan.parquet kept (its verdicts where it kept no judge)."""
    labels = plan["label"].to_numpy(dtype=np.float64)
    if certifies != "gold":
        return ev.estimate(planned, labels, params).paula
    if "gold" not in plan.columns:
        raise DataError("a run that certifies gold has no 'gold' column in its plan.parquet; the run was altered.")
    judge = plan["judge"].to_numpy(dtype=np.float64) if "judge" in plan.columns else None
    if "audit_class" in plan.columns:  # the audit was drawn by the judge column's classes
        planned = dataclasses.replace(planned, audit_judge=plan["audit_class"].to_numpy(dtype=np.float64))
    gold = planned.plan_labels(plan["gold"].to_numpy(dtype=np.float64))
    return ev.gold_paula(planned, planned.plan_labels(labels), gold, judge, params)


def history_table(records: list[RunRecord], *, ranks=None, storage_options=None, last: int | None = None) -> pd.DataFrame:
    """One row per (run, rank) of one series, first place first, with the certain changes.

    ``last`` keeps only the last so many releases, each still bounded at its place in the whole
    series (the first of them then has no earlier release to be compared with: no change).
    ``certifies`` says what each row's bounds hold for; a release that certifies something else
    than the previous one (gold against verdicts) has no change.
    """
    import pandas as pd  # the history's tables; a run loads no pandas

    if ranks is not None:
        ranks = [RANK.check(rank, owner="history_table") for rank in ranks]
    placed = placed_releases(records)
    if ranks is None:
        latest = placed[-1][0].manifest
        ranks = default_ranks([row["rank"] for row in latest.get("cutoffs", [])], int(latest["n"]))
    ranks = np.asarray(ranks, dtype=np.int64)
    first = 0 if last is None else max(len(placed) - last, 0)
    frames, previous = [], None
    for record, place in placed[first:]:
        lower, upper = _bounds_at(record, place, ranks, storage_options)
        alike = previous is not None and previous[2] == record.certifies
        change = certain_changes(*previous[:2], lower, upper) if alike else np.full(ranks.size, "", dtype=object)
        previous = (lower, upper, record.certifies)
        frames.append(pd.DataFrame({
            "series": record.series, "place": place, "release": record.release_name,
            "run_id": record.manifest["run_id"], "resource": record.manifest["input"]["url"],
            "created": record.created, "n": int(record.manifest["n"]), "rank": ranks,
            "precision_lower": lower, "precision_upper": upper, "change": change,
            "certifies": record.certifies,
        }))
    return pd.concat(frames, ignore_index=True)[list(HISTORY_COLUMNS)]


def judge_table(records: list[RunRecord]) -> pd.DataFrame:
    """One row per release of one series with a judge measured against gold (:data:`JUDGE_COLUMNS`).

    Sensitivity and specificity with their intervals at the release's place
    (:func:`prdist.history.judge_rates`, at the run's confidence), kappa, and ``drift``: the
    rates whose intervals are disjoint from those of the previous such release
    (:func:`prdist.history.judge_drift`). Releases without a judge and gold are left out; a run
    without a confidence level gets no intervals and no drift.
    """
    import pandas as pd  # the history's tables; a run loads no pandas

    rows, previous = [], None
    for record, place in placed_releases(records):
        counts = record.judge_counts
        if counts is None:
            continue
        confidence = record.manifest.get("params", {}).get("confidence")
        rates = None if confidence is None else judge_rates(counts, float(confidence), place)
        rows.append({"series": record.series, "place": place, "release": record.release_name,
                     "run_id": record.manifest["run_id"], "certifies": record.certifies, **_rate_columns(counts, rates),
                     "drift": judge_drift(previous, rates)})
        previous = rates if rates is not None else previous
    return pd.DataFrame(rows, columns=list(JUDGE_COLUMNS))


def _rate_columns(counts: dict, rates: JudgeRates | None) -> dict:
    """The judge's figures as columns: each rate with its interval (NaN where undefined)."""
    out = {"compared": int(counts["compared"]), "kappa": counts.get("kappa"),
           "confidence": np.nan if rates is None else rates.confidence}
    for name in ("sensitivity", "specificity"):
        found = None if rates is None else getattr(rates, name)
        point = counts.get(name)
        out[name] = np.nan if point is None else float(point)
        out[f"{name}_lower"], out[f"{name}_upper"] = (np.nan, np.nan) if found is None else found[1:]
    out["kappa"] = np.nan if out["kappa"] is None else float(out["kappa"])
    return out


def _browser_url(url: str, storage_options) -> str:
    """A local path as a ``file://`` URL a browser opens; other stores' URLs as they are."""
    fs, path = filesystem(url, storage_options)
    return fs.unstrip_protocol(path) if "file" in fs.protocol else url


_SCHEMA = pa.schema([
    ("series", pa.string()), ("place", pa.int64()), ("release", pa.string()), ("run_id", pa.string()), ("resource", pa.string()),
    ("created", pa.timestamp("ms", tz="UTC")), ("n", pa.int64()), ("rank", pa.int64()),
    ("precision_lower", pa.float64()), ("precision_upper", pa.float64()), ("change", pa.string()), ("certifies", pa.string()),
])
JUDGE_FILE = "judge_quality.parquet"
_JUDGE_SCHEMA = pa.schema([(name, pa.string() if name in ("series", "release", "run_id", "certifies", "drift")
                            else pa.int64() if name in ("place", "compared") else pa.float64()) for name in JUDGE_COLUMNS])


def default_out(runs: str, series: str | None = None) -> str:
    """Where ``prdist history`` writes without ``--out``: ``<runs>/_history`` for every series, and
    ``<runs>/_history/<series>-<hash>`` for one series (its name made a file name, with 8 hex digits of
    its SHA-256 so that no two series share a place), so the two never overwrite each other.

    >>> default_out("runs", "file:///data/kb")
    'runs/_history/file-data-kb-f04d18a6'
    """
    root = join_url(runs, "_history")
    if series is None:
        return root
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", series).strip("-.")[:60] or "series"
    return join_url(root, f"{name}-{hashlib.sha256(series.encode('utf-8')).hexdigest()[:8]}")


def write_history(runs: str, *, out: str | None = None, series: str | None = None, ranks=None, storage_options=None) -> tuple[str, pd.DataFrame]:
    """Write ``history.parquet`` and ``history.html`` for the series under ``runs``; return (out, table).

    ``out`` defaults to :func:`default_out`. Every series found is written unless ``series`` names one.
    """
    import pandas as pd  # the history's tables; a run loads no pandas

    records, _ = read_runs(runs, storage_options=storage_options)
    by_series: dict[str, list[RunRecord]] = {}
    for record in records:
        by_series.setdefault(record.series, []).append(record)
    if series is not None:
        if series not in by_series:
            raise InputError(f"No PAULA run under {runs} belongs to series {series!r}; series there: {sorted(by_series) or 'none'}.")
        by_series = {series: by_series[series]}
    if not by_series:
        raise InputError(f"No committed PAULA run under {runs}. Run 'prdist run --out {runs}' first.")
    table = pd.concat([history_table(rs, ranks=ranks, storage_options=storage_options) for rs in by_series.values()], ignore_index=True)
    judges = pd.concat([judge_table(rs) for rs in by_series.values()], ignore_index=True)
    out = out or default_out(runs, series)
    reports = {r.manifest["run_id"]: _browser_url(join_url(r.url, "report.html"), storage_options) for r in records}
    write_parquet(pa.Table.from_pandas(table, schema=_SCHEMA, preserve_index=False), join_url(out, "history.parquet"),
                  storage_options=storage_options, exclusive=False)
    _write_judges(judges, out, storage_options)
    from prdist.render.history import render_history

    html = render_history(table, reports, judges).encode("utf-8")
    publish(resolve(join_url(out, "history.html"), storage_options=storage_options), lambda fh: fh.write(html), exclusive=False)
    return out, table


def _write_judges(judges: pd.DataFrame, out: str, storage_options) -> None:
    """``judge_quality.parquet`` when some release has a judge measured against gold; else none
    (one left by an earlier history of other runs is removed, so the directory never mixes two)."""
    url = join_url(out, JUDGE_FILE)
    if len(judges):
        write_parquet(pa.Table.from_pandas(judges, schema=_JUDGE_SCHEMA, preserve_index=False), url,
                      storage_options=storage_options, exclusive=False)
        return
    fs, path = filesystem(url, storage_options)
    if info_or_none(fs, path, where=url) is not None:
        fs.rm(path)


def read_judge_quality(out: str, *, storage_options=None) -> pd.DataFrame | None:
    """The judge_quality.parquet a history wrote under ``out``, or None where it wrote none
    (no release of the history had a judge and a gold audit)."""
    import pandas as pd  # the history's tables; a run loads no pandas

    url = join_url(out, JUDGE_FILE)
    fs, path = filesystem(url, storage_options)
    if info_or_none(fs, path, where=url) is None:
        return None
    with fs.open(path, "rb") as fh:
        return pd.read_parquet(fh)


def newest_changes(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{series: the rows of its newest release with a certain change} of a history table.

    Series whose newest release changed nothing for certain are left out.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"series": ["kb"] * 4, "run_id": ["a", "a", "b", "b"], "rank": [10, 100] * 2,
    ...                       "change": ["", "", "down", ""]})
    >>> {s: rows["rank"].tolist() for s, rows in newest_changes(table).items()}
    {'kb': [10]}
    """
    out = {}
    for series, rows in table.groupby("series", sort=False):
        newest = rows[rows["run_id"] == rows["run_id"].iloc[-1]]
        if (newest["change"] != "").any():
            out[series] = newest[newest["change"] != ""]
    return out


def run_changes(runs, run_id: str, series: str, *, storage_options=None) -> pd.DataFrame | None:
    """The certain changes a committed run makes to its series when it is the newest release there.

    Cheap: only the run and the release before it are bounded again (at their places). None when
    the run is not the newest release of ``series`` (it evaluated an older release again) or
    changes nothing for certain.
    """
    at = resolve(runs, storage_options=storage_options)  # the runs root: its runs' files open with its credentials
    records, _ = read_runs(at)
    table = history_table([r for r in records if r.series == series], storage_options=at.storage_options, last=2)
    found = newest_changes(table).get(series)
    return found if found is not None and found["run_id"].iloc[0] == run_id else None
