"""Tests of prdist.render.report: structure, the numbers shown, escaping, secrets and the SVG plots.

Runs are built through the real core (plan_paula, paula_bounds, derived) on a synthetic ranked
resource whose precision falls with depth, so the report sees the tables a run writes.
"""

import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from prdist import paula_bounds, plan_paula, precision_function
from prdist.paula.derived import average_precision_bounds, deepest_rank
from prdist.errors import DataError, ParameterError
from prdist.render import render_report

XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SVG_NS = "{http://www.w3.org/2000/svg}"


def make_run(n=60_000, *, seed=0, unknown=0.02, eps=0.05, window=50):
    """Every input render_report takes, from one synthetic run (the truth is known)."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, n + 1)
    labels = (rng.random(n) < 0.97 - 0.45 * ranks / n).astype(float)
    scores = np.sort(rng.normal(size=n))[::-1]
    keys = np.array([f"item-{i:07d}" for i in range(n)])
    plan = plan_paula(n, eps=eps, window=window)
    planned = labels[plan.ranks - 1].copy()
    planned[rng.random(plan.size) < unknown] = np.nan
    b = paula_bounds(plan, planned)
    role, grid_index = plan.roles()
    plan_frame = pd.DataFrame(
        {
            "rank": plan.ranks,
            "key": keys[plan.ranks - 1],
            "score": scores[plan.ranks - 1],
            "role": role,
            "grid_index": grid_index,
            "label": planned,
        }
    )
    targets = [0.9, 0.8, 0.7, 0.3]
    deepest = [deepest_rank(b, t) for t in targets]
    cutoffs = pd.DataFrame(
        {"target": targets, "rank": deepest, "score": [scores[r - 1] if r else np.nan for r in deepest]}
    )
    recall = np.linspace(0.05, 0.95, 19)
    precision = 0.95 - 0.3 * recall
    bands = pd.DataFrame(
        {
            "recall": recall,
            "precision": precision,
            "band_lower": precision - 0.08,
            "band_upper": np.minimum(precision + 0.08, 1.0),
            "pointwise_lower": precision - 0.04,
            "pointwise_upper": precision + 0.04,
        }
    )
    manifest = {
        "status": "complete",
        "run_id": "0123456789abcdef0123",
        "n": n,
        "params": {"eps": eps, "window": window, "method": "paula", "confidence": None, "seed": 7},
        "counts": {
            "annotations": plan.size,
            "labeled": int(np.isfinite(planned).sum()),
            "unknown": int(np.isnan(planned).sum()),
        },
        "input": {"url": "file:///data/resource", "fingerprint": "sha256:feedbeef"},
        "diagnostics": b.diagnostics.to_dict(),
        "versions": {"prdist": "0.1.0", "numpy": np.__version__},
        "timings": {"plan": 0.125, "bounds": 0.5},
        "ap_bounds": list(average_precision_bounds(b)),
    }
    exact = pd.DataFrame({"rank": ranks, "precision": precision_function(labels)})
    return {
        "manifest": manifest,
        "bounds": b.table(),
        "plan": plan_frame,
        "bands": bands,
        "exact": exact,
        "cutoffs": cutoffs,
    }


@pytest.fixture(scope="module")
def run():
    return make_run()


@pytest.fixture(scope="module")
def page(run):
    return render_report(**run, title="Test run")


def body_xml(page):
    """The <body> parsed as XML: every tag balanced, every attribute quoted, every entity valid."""
    return ET.fromstring(page[page.index("<body>") : page.index("</body>") + len("</body>")])


def svgs(page):
    return [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", page, flags=re.S)]


def svg_by_id(page, fig_id):
    matches = [s for s in svgs(page) if s.get("id") == fig_id]
    assert len(matches) == 1
    return matches[0]


def section_ids(page):
    return re.findall(r'<section id="([a-z]+)"', page)


def minimal_bounds():
    return pd.DataFrame(
        {
            "rank": [1, 2, 3, 10, 40],
            "precision_lower": [1.0, 0.5, 2 / 3, 0.4, 0.2],
            "precision_upper": [1.0, 0.5, 2 / 3, 0.7, 0.6],
            "yield_lower": [1.0, 1.0, 2.0, 4.0, 8.0],
            "yield_upper": [1.0, 1.0, 2.0, 7.0, 24.0],
        }
    )


# -- structure ----------------------------------------------------------------------------------
def test_full_report_has_every_section_and_is_one_document(page):
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<html") == 1 and page.count("</html>") == 1
    assert section_ids(page) == ["precision", "pr", "bands", "cutoffs", "labels", "diagnostics", "run"]
    assert [s.get("id") for s in svgs(page)] == ["fig-precision", "fig-pr", "fig-bands"]
    body_xml(page)


def test_report_is_self_contained(page):
    assert "<script" not in page.lower()
    # The only URLs are the SVG namespace (an identifier, never fetched) and the input shown as text.
    urls = set(re.findall(r"(?:https?|ftp)://[^\s\"'<]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"\b(?:src|href)=\"(?!#)", page)  # only in-page links
    assert "default-src 'none'" in page


def test_minimal_inputs_give_the_two_bounds_plots_only():
    page = render_report(manifest={}, bounds=minimal_bounds())
    assert section_ids(page) == ["precision", "pr", "labels"]
    assert [s.get("id") for s in svgs(page)] == ["fig-precision", "fig-pr"]
    assert "No assumption diagnostics were recorded" in page
    assert "The manifest records no label counts." in page
    assert "<title>prdist report</title>" in page
    body_xml(page)


@pytest.mark.parametrize("dropped", ["bands", "cutoffs", "plan", "exact"])
def test_each_optional_input_only_adds_its_own_parts(run, dropped):
    without = render_report(**{k: v for k, v in run.items() if k != dropped})
    expected = {"bands": "bands", "cutoffs": "cutoffs"}.get(dropped)
    if expected:
        assert expected not in section_ids(without)
        assert f'id="fig-{expected}"' not in without
    if dropped == "plan":
        assert "By part of the plan" not in without and "Items awaiting labels" not in without
        # Without the plan, the labeled prefix is recovered from the bounds table itself.
        assert "labeled prefix 1\u2013" in without
    if dropped == "exact":
        assert "exact p(r)" not in without and "exact PR curve" not in without
    body_xml(without)


def test_svgs_are_well_formed_and_draw_data(page):
    for svg in svgs(page):
        assert svg.tag == SVG_NS + "svg"
        assert svg.find(SVG_NS + "title").text
        drawn = [e for tag in ("polyline", "polygon", "circle") for e in svg.iter(SVG_NS + tag)]
        assert len(drawn) >= 2
    precision = svg_by_id(page, "fig-precision")
    assert len(list(precision.iter(SVG_NS + "polyline"))) >= 3  # lower, upper, exact
    assert len(list(precision.iter(SVG_NS + "polygon"))) >= 1  # the band


# -- the plots show the numbers -------------------------------------------------------------------
COUNT_SUFFIX = {"k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def tick_maps(svg):
    """Data <- pixel maps recovered from the tick labels the reader sees."""
    xs, ys = [], []
    for text in svg.iter(SVG_NS + "text"):
        anchor, label = text.get("text-anchor"), (text.text or "")
        if not re.fullmatch(r"[0-9.]+[kMBT]?", label):
            continue
        value = float(label[:-1]) * COUNT_SUFFIX[label[-1]] if label[-1] in COUNT_SUFFIX else float(label)
        if anchor == "middle":
            xs.append((float(text.get("x")), value))
        elif anchor == "end":
            ys.append((float(text.get("y")) - 4, value))
    (px0, x0), (px1, x1) = xs[0], xs[-1]
    (py0, y0), (py1, y1) = ys[0], ys[-1]

    def to_rank(px):
        return 10 ** (math.log10(x0) + (px - px0) / (px1 - px0) * (math.log10(x1) - math.log10(x0)))

    def to_value(py):
        return y0 + (py - py0) / (py1 - py0) * (y1 - y0)

    return to_rank, to_value


def polyline_points(svg, *, stroke, dash=None):
    """Vertices of every polyline drawn in ``stroke`` with dash pattern ``dash`` (None: solid)."""
    lines = [p for p in svg.iter(SVG_NS + "polyline") if p.get("stroke") == stroke and p.get("stroke-dasharray") == dash]
    assert lines, (stroke, dash)
    return np.array([[float(v) for v in pt.split(",")] for p in lines for pt in p.get("points").split()])


def test_precision_plot_lines_are_the_bounds(run, page):
    svg = svg_by_id(page, "fig-precision")
    to_rank, to_value = tick_maps(svg)
    bounds = run["bounds"]
    ranks = bounds["rank"].to_numpy()
    for column, dash in (("precision_lower", None), ("precision_upper", "5 3")):
        pts = polyline_points(svg, stroke="#08519c", dash=dash)
        shown_ranks = np.array([to_rank(x) for x in pts[:, 0]])
        shown = np.array([to_value(y) for y in pts[:, 1]])
        nearest = np.abs(np.log(ranks)[None, :] - np.log(shown_ranks)[:, None]).argmin(axis=1)
        # Pixels are written to 0.1 unit: rounding moves a value by under 0.001 (the y axis
        # spans at most 1.0 over 332 units) and a rank by under 0.1%, where neighbouring ranks'
        # bounds differ by at most 1/r + 0.1% relative.
        assert np.abs(shown - bounds[column].to_numpy()[nearest]).max() < 0.005, column
        # The line spans the whole resource: from rank 1 to n.
        assert shown_ranks.min() == pytest.approx(1, rel=1e-3)
        assert shown_ranks.max() == pytest.approx(ranks[-1], rel=1e-3)
    exact = polyline_points(svg, stroke="#cb181d")
    truth = run["exact"]["precision"].to_numpy()
    shown_ranks = np.rint([to_rank(x) for x in exact[:, 0]]).astype(int)
    # The exact curve at rank r and its neighbours within 0.1% of r bracket what is drawn.
    window = np.maximum(2, (shown_ranks * 0.002).astype(int))
    for r, w, y in zip(shown_ranks, window, exact[:, 1]):
        near = truth[max(r - w, 1) - 1 : r + w]
        assert near.min() - 0.002 <= to_value(y) <= near.max() + 0.002


def test_rank_axis_is_logarithmic_with_readable_labels(page):
    labels = [t.text for t in svg_by_id(page, "fig-precision").iter(SVG_NS + "text") if t.get("text-anchor") == "middle"]
    assert [lab for lab in labels if re.fullmatch(r"[0-9.]+[kMB]?", lab)] == ["1", "10", "100", "1k", "10k"]
    small = render_report(manifest={}, bounds=minimal_bounds())
    labels = [t.text for t in svg_by_id(small, "fig-precision").iter(SVG_NS + "text") if t.get("text-anchor") == "middle"]
    assert [lab for lab in labels if re.fullmatch(r"[0-9.]+", lab)] == ["1", "2", "5", "10", "20"]


def constant_bounds(ranks, lower, upper):
    """A bounds table whose precision bounds stay near ``lower`` and ``upper`` at every rank."""
    ranks = np.asarray(ranks)
    ylo, yhi = np.floor(lower * ranks), np.ceil(upper * ranks)
    return pd.DataFrame(
        {"rank": ranks, "precision_lower": ylo / ranks, "precision_upper": yhi / ranks, "yield_lower": ylo, "yield_upper": yhi}
    )


def test_large_bounds_tables_are_downsampled():
    n = 2_000_000
    plan = plan_paula(n, eps=0.01, window=100)  # a 10,200-rank prefix and ~690 grid points
    table = paula_bounds(plan, np.ones(plan.size)).table()
    grid_points = int((table["rank"] > plan.g_l).sum())
    assert len(table) > 10_000 and grid_points < 1500
    page = render_report(manifest={"n": n}, bounds=table)
    lower = polyline_points(svg_by_id(page, "fig-precision"), stroke="#08519c")
    # At most 300 log-spaced prefix ranks (and every grid rank) per line.
    assert grid_points < len(lower) <= 300 + grid_points + 1

    # A fine grid over a billion items: 5,000 grid ranks past a 1,000-rank prefix.
    ranks = np.unique(np.r_[np.arange(1, 1001), np.geomspace(1001, 1e9, 5000).astype(np.int64)])
    page = render_report(manifest={"n": int(ranks[-1])}, bounds=constant_bounds(ranks, 0.8, 0.9))
    svg = svg_by_id(page, "fig-precision")
    assert len(polyline_points(svg, stroke="#08519c")) <= 300 + 1500 + 2
    # Markers stay at least 7 units apart: at most one per 7 units of the 616-unit-wide plot, per line.
    assert len(list(svg.iter(SVG_NS + "circle"))) <= 2 * (616 // 7 + 1) + 1
    assert "grid points (1 in " in page
    assert len(page) < 400_000


# -- the tables show the numbers ----------------------------------------------------------------
def test_headline_numbers_match_the_inputs(run, page):
    bounds, manifest = run["bounds"], run["manifest"]
    last = bounds.iloc[-1]
    assert f"{last['precision_lower']:.3f} \u2013 {last['precision_upper']:.3f}" in page
    lo, hi = manifest["ap_bounds"]
    assert f"{lo:.3f} \u2013 {hi:.3f}" in page
    counts = manifest["counts"]
    assert f"{counts['labeled']:,} / {counts['annotations']:,}" in page
    assert f"{manifest['n']:,}" in page


def test_cutoff_table_matches_the_inputs(run, page):
    n = run["manifest"]["n"]
    for row in run["cutoffs"].itertuples():
        if row.rank:
            assert f"<td class=\"num\">{row.rank:,}</td><td class=\"num\">{row.score:.4f}</td>" in page
            assert f"keep the top {row.rank:,} items ({100 * row.rank / n:.1f}% of the resource)" in page
    empty = pd.DataFrame({"target": [0.999], "rank": [0], "score": [np.nan]})
    assert "no cut-off is guaranteed to reach this precision" in render_report(
        manifest={}, bounds=minimal_bounds(), cutoffs=empty
    )


def test_label_budget_explains_unknown_labels(run, page):
    counts = run["manifest"]["counts"]
    assert counts["unknown"] > 0
    assert f"{counts['unknown']:,} planned labels are unknown" in page
    assert "incorrect for the lower bound and as correct for the upper bound" in page
    plan = run["plan"]
    prefix = plan[plan["role"] == "prefix"]
    assert (
        f"<td>prefix</td><td class=\"num\">{len(prefix):,}</td><td class=\"num\">{prefix['label'].notna().sum():,}</td>"
        f"<td class=\"num\">{prefix['label'].isna().sum():,}</td><td class=\"num\">{int((prefix['label'] == 1).sum()):,}</td>"
        in page
    )
    first_unknown = plan[plan["label"].isna()].iloc[0]
    assert f"<td class=\"num\">{first_unknown['rank']:,}</td><td>{first_unknown['key']}</td>" in page

    known = dict(run["manifest"], counts={"annotations": 10, "labeled": 10, "unknown": 0})
    assert "Every planned label is known" in render_report(manifest=known, bounds=run["bounds"])


def test_band_parameters_appear_only_with_bands():
    # An older manifest lists the bands' replicates and sample without bands: not shown then.
    params = {"method": "paula", "bands": False, "replicates": 1000, "band_sample": 2000, "confidence": 0.95}
    page = render_report(manifest={"params": params}, bounds=minimal_bounds())
    assert "<code>replicates</code>" not in page and "<code>band_sample</code>" not in page
    assert "<code>confidence</code></td><td>0.95</td>" in page
    banded = render_report(manifest={"params": dict(params, bands=True)}, bounds=minimal_bounds())
    assert "<code>replicates</code></td><td>1,000</td>" in banded and "<code>band_sample</code></td><td>2,000</td>" in banded


def test_parameters_input_versions_and_timings_are_shown(page):
    assert "<code>eps</code></td><td>0.05</td>" in page
    assert "<code>window</code></td><td>50</td>" in page
    assert "<code>confidence</code>" not in page  # not set: not shown
    assert "file:///data/resource" in page and "sha256:feedbeef" in page
    assert "<td>numpy</td><td>" + np.__version__ in page
    assert "<td>bounds</td><td class=\"num\">0.5 s</td>" in page


# -- diagnostics in plain language --------------------------------------------------------------
CLEAN = {
    "precondition_holds": True,
    "monotonicity_violations": 0,
    "largest_rise": 0.0,
    "rise_ranks": [],
    "max_ratio": 1.02,
    "gamma": 1.05,
    "contradictions": 0,
    "contradiction_ranks": [],
    "unknown_labels": 0,
    "assumptions_plausible": True,
}


def diagnostics_section(diagnostics):
    page = render_report(manifest={"diagnostics": diagnostics}, bounds=minimal_bounds())
    return page[page.index('<section id="diagnostics">') :]


def test_clean_diagnostics_read_as_no_evidence_against():
    text = diagnostics_section(CLEAN)
    assert "no evidence against monotonicity" in text
    assert "within \u03b3, as Lemma 4 promises" in text
    assert "the yield bounds are consistent everywhere" in text
    assert 'class="bad"' not in text and 'class="warn"' not in text
    page = render_report(manifest={"diagnostics": CLEAN}, bounds=minimal_bounds())
    assert "show no evidence against the assumptions" in page


def test_violations_read_as_where_the_guarantee_may_fail():
    diag = dict(
        CLEAN,
        precondition_holds=None,
        monotonicity_violations=3,
        largest_rise=0.02,
        rise_ranks=[5000, 7000, 9100],
        contradictions=1,
        contradiction_ranks=[7000],
        max_ratio=1.2,
        unknown_labels=12,
        assumptions_plausible=False,
    )
    text = diagnostics_section(diag)
    assert "the local precision rises at 3 grid points, by up to 0.020: the guarantee may not hold there" in text
    assert "(at ranks 5,000, 7,000, 9,100)" in text
    assert "contradict each other at 1 grid point: A.2 is certainly false there" in text
    assert "exceeds \u03b3" in text
    assert "unknown labels leave it open" in text
    page = render_report(manifest={"diagnostics": diag}, bounds=minimal_bounds())
    assert "show evidence against the assumptions behind the bounds" in page


def test_unknown_diagnostic_keys_are_listed_as_scalars():
    diag = dict(CLEAN, confidence=0.95, noise_rate=0.01, per_point={"nested": 1})
    text = diagnostics_section(diag)
    assert "<td>confidence</td><td>0.95</td>" in text
    assert "<td>noise_rate</td><td>0.01</td>" in text
    assert "per_point" not in text  # not a scalar: not dumped


def test_confidence_mode_weighs_the_noise_model_instead_of_a2(run):
    n = run["manifest"]["n"]
    plan = plan_paula(n, eps=0.05, window=50)
    truth = run["exact"]["precision"].to_numpy() * np.arange(1, n + 1)
    labels = np.diff(np.r_[0.0, np.rint(truth)])  # the run's labels, recovered from p(r)
    b = paula_bounds(plan, labels[plan.ranks - 1], confidence=0.95)
    diag = b.diagnostics.to_dict()
    assert diag["monotonicity_violations"] > 0 and diag["confidence"]["model_rejected"] is False
    page = render_report(manifest={"n": n, "diagnostics": diag}, bounds=b.table())
    text = page[page.index('<section id="diagnostics">') :]
    assert "chance variation of the labels does that, and the confidence bounds allow for it" in text
    assert "the guarantee may not hold there" not in text
    assert f"p = {diag['confidence']['monotone_rate_test']['p_value']:.3g}" in text
    assert "no evidence against a rate that does not rise with rank" in text
    assert f"{diag['confidence']['widening_mean']:.3f} mean, {diag['confidence']['widening_max']:.3f} max" in text
    assert f"<td>confidence.tail_rate</td><td>{diag['confidence']['tail_rate']:.4g}</td>" in text
    assert "with probability at least 0.95" in page[: page.index('<section id="pr">')]  # the plot's caption

    rejected = dict(diag, assumptions_plausible=False)
    rejected["confidence"] = dict(diag["confidence"], model_rejected=True, guarantee_applies=False)
    text = diagnostics_section(rejected)
    assert "reject a rate that does not rise with rank: the confidence guarantee may not hold" in text
    assert "the coverage guarantee does not apply" in text


# -- security -----------------------------------------------------------------------------------
def test_untrusted_strings_appear_only_escaped(run):
    plan = run["plan"].copy()
    first_unknown = plan.index[plan["label"].isna()][0]
    plan["key"] = plan["key"].astype(object)
    plan.loc[first_unknown, "key"] = XSS
    manifest = dict(
        run["manifest"],
        status=XSS,
        run_id=XSS,
        input={"url": XSS, "fingerprint": XSS},
        params=dict(run["manifest"]["params"], method=XSS),
        versions={XSS: XSS},
        diagnostics=dict(run["manifest"]["diagnostics"], **{XSS: XSS}),
    )
    page = render_report(**dict(run, plan=plan, manifest=manifest), title=XSS)
    assert XSS not in page
    assert "<script" not in page.lower()
    # Shown where each string belongs: title, status, source, awaiting items, params...
    assert page.count(XSS_ESCAPED) >= 9
    assert f"<td>{XSS_ESCAPED}</td>" in page  # the key in the awaiting-labels table
    body_xml(page)


SECRETS = ("AKIA-SENTINEL-1", "SECRET-SENTINEL-2", "SIGNATURE-SENTINEL-3", "PASSWORD-SENTINEL-4", "TOKEN-SENTINEL-5")


def test_credentials_never_appear(run):
    manifest = dict(
        run["manifest"],
        params=dict(
            run["manifest"]["params"],
            storage_options={"key": SECRETS[0], "secret": SECRETS[1], "client_kwargs": {"endpoint_url": "http://x"}},
            aws_secret_access_key=SECRETS[1],
            labels=f"s3://user:{SECRETS[3]}@labels-bucket/store",
        ),
        input={"url": f"https://user:{SECRETS[3]}@host/data.parquet?X-Amz-Signature={SECRETS[2]}", "fingerprint": "f"},
        storage_options={"token": SECRETS[4]},
        versions={"prdist": "0.1.0", "token": SECRETS[4]},
        timings={"secret_seconds": SECRETS[1]},
        diagnostics=dict(run["manifest"]["diagnostics"], api_key=SECRETS[0]),
    )
    page = render_report(**dict(run, manifest=manifest))
    for secret in SECRETS:
        assert secret not in page
    assert "storage_options" not in page and "client_kwargs" not in page
    # What is safe to show still is: the host and path of the URLs.
    assert "https://host/data.parquet (query not shown)" in page
    assert "s3://labels-bucket/store" in page


# -- input checks -------------------------------------------------------------------------------
def test_bad_inputs_raise_one_clear_error(run):
    bounds = minimal_bounds()
    with pytest.raises(ParameterError, match="'manifest' parameter of render_report must be a dict"):
        render_report(manifest=[("n", 40)], bounds=bounds)
    with pytest.raises(ParameterError, match="'bounds' parameter of render_report must be a pandas DataFrame"):
        render_report(manifest={}, bounds=bounds.to_dict())
    with pytest.raises(DataError, match="lacks the column\\(s\\) yield_upper"):
        render_report(manifest={}, bounds=bounds.drop(columns="yield_upper"))
    with pytest.raises(DataError, match="lacks the column\\(s\\) pointwise_lower"):
        render_report(manifest={}, bounds=bounds, bands=run["bands"].drop(columns="pointwise_lower"))
    nan = bounds.assign(precision_upper=[1.0, np.nan, 1.0, 1.0, 1.0])
    with pytest.raises(DataError, match="'precision_upper' column .* row 1 \\(counting from 0\\) holds nan"):
        render_report(manifest={}, bounds=nan)
    with pytest.raises(DataError, match="rank 3 twice"):
        render_report(manifest={}, bounds=bounds.assign(rank=[1, 2, 3, 3, 40]))
    with pytest.raises(DataError, match="manifest says n = 50 but the bounds table .* ends at rank 40"):
        render_report(manifest={"n": 50}, bounds=bounds)
    with pytest.raises(DataError, match="empty"):
        render_report(manifest={}, bounds=bounds.iloc[:0])
    with pytest.raises(DataError, match="lower bound above its upper bound"):
        render_report(manifest={}, bounds=bounds.assign(precision_lower=[1.0, 0.6, 0.7, 0.4, 0.2]))


def test_rows_in_any_order_give_the_same_page(run):
    shuffled = run["bounds"].sample(frac=1.0, random_state=1)
    assert render_report(**dict(run, bounds=shuffled)) == render_report(**run)


def test_bands_with_gaps_still_render():
    bands = pd.DataFrame(
        {c: [np.nan, 0.5, 0.6, np.nan] for c in ("band_lower", "band_upper", "pointwise_lower", "pointwise_upper")}
        | {"recall": [0.1, 0.2, 0.3, 0.4], "precision": [0.9, 0.8, 0.7, 0.6]}
    )
    page = render_report(manifest={}, bounds=minimal_bounds(), bands=bands)
    assert 'id="fig-bands"' in page
    empty = bands.assign(recall=np.nan)
    page = render_report(manifest={}, bounds=minimal_bounds(), bands=empty)
    assert "holds no finite values" in page and 'id="fig-bands"' not in page


@st.composite
def bounds_tables(draw):
    """Random valid bounds tables: yields non-decreasing, growing by at most one per rank."""
    n_ranks = draw(st.integers(1, 60))
    steps = draw(st.lists(st.integers(1, 5000), min_size=n_ranks, max_size=n_ranks))
    ranks = np.cumsum(steps)
    ranks = ranks - ranks[0] + 1
    fractions = np.array(draw(st.lists(st.floats(0, 1), min_size=n_ranks, max_size=n_ranks)))
    spread = np.array(draw(st.lists(st.floats(0, 1), min_size=n_ranks, max_size=n_ranks)))
    ylo = np.floor(fractions * ranks)
    yhi = np.minimum(ranks, ylo + np.floor(spread * (ranks - ylo)))
    return pd.DataFrame(
        {"rank": ranks, "precision_lower": ylo / ranks, "precision_upper": yhi / ranks, "yield_lower": ylo, "yield_upper": yhi}
    )


@given(bounds=bounds_tables())
@settings(max_examples=40, deadline=None)
def test_any_valid_bounds_table_gives_a_well_formed_page(bounds):
    page = render_report(manifest={"n": int(bounds["rank"].iloc[-1])}, bounds=bounds)
    body_xml(page)
    for svg in svgs(page):
        for poly in list(svg.iter(SVG_NS + "polyline")) + list(svg.iter(SVG_NS + "polygon")):
            assert "nan" not in poly.get("points") and "inf" not in poly.get("points")


def test_bands_show_the_worst_case_over_items_nobody_can_judge(run):
    bands = run["bands"]
    worst = bands.assign(precision_worst_low=bands["band_lower"] - 0.05, precision_worst_high=np.minimum(bands["band_upper"] + 0.03, 1.0))
    about = {"cannot_judge_left_out": 12, "assumption": "items nobody can judge are missing at random",
             "band_mean_width": 0.158, "worst_mean_width": 0.231}
    page = render_report(**dict(run, bands=worst, manifest=dict(run["manifest"], bands=about)))
    body_xml(page)
    section = page[page.index('<section id="bands">'):]
    section = section[:section.index("</section>")]
    assert "12 arm items nobody can judge" in section and "missing at random" in section
    assert "precision_worst_low / precision_worst_high" in section and "0.158" in section and "0.231" in section
    figure = svg_by_id(page, "fig-bands")
    dashed = [p for p in figure.iter(SVG_NS + "polyline") if p.get("stroke-dasharray")]
    assert len(dashed) == 2  # the worst-case limits below and above the band
    # Every legend label is whole, in lines that fit beside the plot (it was once cut at the SVG's edge).
    right_edge = 900  # the figure's viewBox width
    for text in figure.iter(SVG_NS + "text"):
        spans = list(text.iter(SVG_NS + "tspan"))
        for span in spans:
            assert float(span.get("x")) + 6.2 * len(span.text) <= right_edge, span.text
    labels = [" ".join(t.text for t in text.iter(SVG_NS + "tspan")) for text in figure.iter(SVG_NS + "text")]
    worst_label = [label for label in labels if label.startswith("worst case")]
    assert len(worst_label) == 1 and worst_label[0].endswith("nobody can judge")
    # Without the worst-case columns (no item left out): the band alone, no dashed limits, no note.
    plain = svg_by_id(render_report(**run), "fig-bands")
    assert not [p for p in plain.iter(SVG_NS + "polyline") if p.get("stroke-dasharray")]
    # Worst case not computed (too many assignments): empty columns, no dashed limits, and the note says so.
    empty = bands.assign(precision_worst_low=np.nan, precision_worst_high=np.nan)
    about = dict(about, worst_case_computed=False, worst_mean_width=None)
    page = render_report(**dict(run, bands=empty, manifest=dict(run["manifest"], bands=about)))
    assert not [p for p in svg_by_id(page, "fig-bands").iter(SVG_NS + "polyline") if p.get("stroke-dasharray")]
    assert "Their worst case (precision_worst_low / precision_worst_high in bands.parquet, empty) is not computed" in page and "no band here holds without the assumption" in page
