"""Aggregates are a property of the label store: a key gets one verdict whichever command asks."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from prdist.dataflow.labels import store as store_module
from prdist.dataflow.run.evaluate import resolve_labels
from prdist.dataflow.labels.importer import import_labels
from prdist.dataflow.labels.store import lookup_labels, store_status, whole_store

KEYS, ANNOTATORS = 1500, 36


def crowd(seed: int = 11) -> pd.DataFrame:
    """Crowd verdicts shaped like real ones: 36 annotators of varied quality (a few near coin flips,
    one adversarial, some biased towards "correct"), 3 to 5 of them per key, 4 % cannot judge."""
    rng = np.random.default_rng(seed)
    truth = rng.random(KEYS) < 0.6
    sensitivity = rng.uniform(0.55, 0.98, ANNOTATORS)
    specificity = rng.uniform(0.45, 0.95, ANNOTATORS)
    sensitivity[:3], specificity[:3] = 0.52, 0.5  # near coin flips
    sensitivity[3], specificity[3] = 0.2, 0.25  # adversarial
    activity = rng.dirichlet(np.full(ANNOTATORS, 0.7))  # a few annotators do most of the work
    rows = []
    for i in range(KEYS):
        for a in rng.choice(ANNOTATORS, size=rng.integers(3, 6), replace=False, p=activity):
            right = rng.random() < (sensitivity[a] if truth[i] else specificity[a])
            said = int(truth[i]) if right else 1 - int(truth[i])
            rows.append((f"item {i:05}, part", "cannot judge" if rng.random() < 0.04 else said, f"w{a:02}"))
    return pd.DataFrame(rows, columns=["key", "label", "annotator"])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("crowd")
    votes = crowd()
    half = votes["key"].isin(votes["key"].unique()[::2])  # two imports: the store is several files
    for name, part in (("a.csv", votes[half]), ("b.csv", votes[~half])):
        part.to_csv(root / name, index=False)
    url = str(root / "store")
    for name in ("a.csv", "b.csv"):
        import_labels(url, [str(root / name)])
    return url, votes


def fresh_lookup(url, keys, rule="dawid-skene"):
    """A lookup as a new command makes it: nothing kept from an earlier read."""
    store_module._LAST_STORE.clear()
    return lookup_labels(url, keys, rule=rule)


def test_dawid_skene_verdict_of_a_key_does_not_depend_on_the_question(store):
    url, votes = store
    keys = np.array(sorted(votes["key"].unique()))
    everything = fresh_lookup(url, keys).kinds
    status = store_status(url, rule="dawid-skene")
    assert status["verdicts"] == {k: int((everything == k).sum()) for k in ("correct", "incorrect", "cannot_judge", "disputed")}
    assert status["disputed_keys"] == everything.index[everything == "disputed"].tolist()
    assert status["fitted_on"]["records"] == len(votes) and status["fitted_on"]["files"] == 2
    rng = np.random.default_rng(5)
    run_sized = rng.choice(keys, size=1100, replace=False)  # a run's plan: most of the store
    asked = [run_sized] + [rng.choice(keys, size=300, replace=False) for _ in range(6)]  # compare-sized
    for subset in asked:
        found = fresh_lookup(url, subset)
        assert found.kinds.to_dict() == everything.loc[subset].to_dict()
        assert found.fitted_on == status["fitted_on"]
    items = pd.DataFrame({"key": run_sized})
    store_module._LAST_STORE.clear()
    resolution = resolve_labels(items, store=url, rule="dawid-skene")
    assert resolution.kinds.tolist() == everything.loc[run_sized].tolist()
    assert resolution.agreement["fitted_on"] == status["fitted_on"] and resolution.agreement["rule"] == "dawid-skene"


def test_the_store_is_read_and_fitted_once_per_store_until_an_import(store, tmp_path, monkeypatch):
    original, votes = store
    url = str(shutil.copytree(original, tmp_path / "store"))  # this test imports: a copy of the module's store
    store_module._LAST_STORE.clear()
    first = whole_store(url)
    fits = []
    real = store_module.aggregate
    monkeypatch.setattr(store_module, "aggregate", lambda records, rule: fits.append(rule) or real(records, rule))
    lookup_labels(url, votes["key"].iloc[:10], rule="dawid-skene")
    lookup_labels(url, votes["key"].iloc[10:400], rule="dawid-skene")
    store_status(url, rule="dawid-skene")
    assert whole_store(url) is first and fits == ["dawid-skene"]
    (tmp_path / "more.csv").write_text('key,label,annotator\n"item 00000, part",1,w35\n')
    import_labels(url, [str(tmp_path / "more.csv")])  # a new file: the store is read and fitted again
    again = whole_store(url)
    assert again is not first and again.scope()["records"] == len(votes) + 1 and again.scope()["files"] == 3


def test_status_stays_readable_with_hundreds_of_annotators_and_keys_with_commas(tmp_path):
    from tests.support.cli_run import cli

    # 176 annotators (as in the real MTurk product data); 30 disputed keys holding ", " and a line break.
    rows = [(f"pair {i}, a\nb", i % 2 if j else 1 - i % 2, f"w{(i + j) % 176:03}") for i in range(30) for j in range(2)]
    rows += [(f"k{i}", 1, f"w{i % 176:03}") for i in range(400)]
    pd.DataFrame(rows, columns=["key", "label", "annotator"]).to_csv(tmp_path / "v.csv", index=False)
    store = str(tmp_path / "store")
    assert cli("labels", "import", "--store", store, str(tmp_path / "v.csv"))[0] == 0
    code, out, _ = cli("labels", "status", "--store", store)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) < 60 and max(map(len, lines)) < 120
    assert "  and 156 more annotators (--json lists them all)" in lines
    assert "disputed keys: 30:" in lines and "  and 10 more disputed keys (--json lists them all)" in lines
    assert "  pair 0, a\\nb" in lines  # one key per line, its line break shown escaped
    assert "keys whose records disagree (annotators, or one annotator's corrections): 30" in out
    assert "relabel" not in out
    code, out, _ = cli("labels", "status", "--store", store, "--json")
    status = json.loads(out)
    assert len(status["annotators"]) == len(status["annotator_verdicts"]) == 176
    assert sum(sum(v.values()) for v in status["annotator_verdicts"].values()) == status["records"] == len(rows)
    assert status["disputed_keys"] == sorted(f"pair {i}, a\nb" for i in range(30)) and status["disagreeing_keys"] == 30
