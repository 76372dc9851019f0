"""The bytes of every artifact of a few ``prdist run``s, pinned (issue 29: a change of how a run
is computed, such as its in-memory frames or its typed results, must not change what it writes).

Each case writes a synthetic resource with ``prdist synth`` (sorted or shuffled, with a judge
column or not), runs ``prdist run`` on it and hashes every file of the run directory. Masked before
hashing, as everywhere runs are compared (tests/integration/test_runners.py): the measured seconds of the
extraction (manifest ``timings``, the report's "Timings" table), the package versions (a re-lock
changes them, not the computation) and the temporary directory's path; the resource's files get a
fixed modification time, which its fingerprint (so the run id) holds. A digest that changes
because the output was meant to change is re-recorded by running this file with
``PRDIST_RECORD_DIGESTS=1`` and pasting what it prints.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.support.cli_run import cli

#: sha256 of each masked file, per case, recorded on the code before issue 29's run-path changes.
DIGESTS = {
    "judge-and-gold": {
        "6e17a5810e6230dfa0c2/annotation_task.csv": "3331d3ef71381b7d887776ff912b1814b430f68907d17d23de34a14aa9c495ad",  # issue 30: the audit is drawn by the judge's classes
        "6e17a5810e6230dfa0c2/annotation_task.jsonl": "7555ab455a40e0e2239a78341fca0102146a0f3ba53fd9e7a657526c9690d214",
        "6e17a5810e6230dfa0c2/bounds.parquet": "1ecfd2d8a2990500885be062d8a95bb44b67581427e88258ec7b3c761ff7e818",
        "6e17a5810e6230dfa0c2/manifest.json": "0dca8bd22a5f3ee22bfddf49d46009b9bd1081ca2b6cc16feeb7de90a2a433b3",
        "6e17a5810e6230dfa0c2/plan.parquet": "4a414747e500f86360f253e9b904e8cbf6ebde7f48ff4cfe1a5f45e876e98b03",  # issue 30: a gold run keeps its judge column; the audit's audit_class
        "6e17a5810e6230dfa0c2/report.html": "d28060cbf0e63616d988b083bc5265996a967f9bd6a2cdd991150445909ae3dd"},
    "labels-imported": {
        "a895c6aee930743588bf/annotation_task.csv": "22f81a04f414ebb7f44baba99dcddcc8adce847384f9f14cd89b37c102cd8087",
        "a895c6aee930743588bf/annotation_task.jsonl": "2caaa9377edc30cb61bd0e001f868afae3703f009eacc661cf8a88d9605e036c",
        "a895c6aee930743588bf/bounds.parquet": "65d5d1b34930665475f1a0c871dce1d38297edd06d8f04dae6a16dcc593ff63b",
        "a895c6aee930743588bf/manifest.json": "21d4021de2b48e1fac2d510d55d378811ea8b97e152548b80e0d53c1bbc9732b",
        "a895c6aee930743588bf/plan.parquet": "4f705fe5a3abfeef931c48901057825b865770ca26d7ab8fbe02a9a7a7355e93",
        "a895c6aee930743588bf/report.html": "4176bb1fb9bcc023354dcd495eff79d13d4f2a4f360c496da4c82e0d98d6e816",
        "6ef3811593904e8feb2a/bounds.parquet": "368efdee9c3e449b68c0ec4c57bfa58d719be799d7afa5d376d6fbc951ff22bd",
        "6ef3811593904e8feb2a/manifest.json": "f5b92071cf7b00d8591768a0b6f194e32ab91caefa7bfd2039131d0f87e68ba6",
        "6ef3811593904e8feb2a/plan.parquet": "c8a8461da8b3f2495a5568e354ac884bc2bbcb3909e62740b925df04b481e472",
        "6ef3811593904e8feb2a/report.html": "bd20d3ad1cc6f50b9db3a8d447b25d4b1beab6f8c098b2da86d5228dcd191e71"},
    "shuffled-oracle-bands": {
        "198e9ab271cfbad2edab/bands.parquet": "772fa3800bb2e1828fd277eb2eee9921390e27e7ddf0eba86a0fdbfe6a2e31e2",
        "198e9ab271cfbad2edab/bounds.parquet": "113e7aa470014281323b7369f6cf7deb4a1160e6a4420e0e6cba792b1b055338",
        "198e9ab271cfbad2edab/exact.parquet": "a914b94b3b1afda678b09ff19c5f375d9c5aefcb3b56fc97e92e63f5d22c2bbe",
        "198e9ab271cfbad2edab/manifest.json": "f7d50cf450a2ccc520fd1ceafa5d68b919afc0794d0f59e33e8f3fa168bd2648",
        "198e9ab271cfbad2edab/plan.parquet": "4fea13c0e1b685df6089ddab7eaa453f345ed751f30d818e5ec49d2dfa99bf5c",
        "198e9ab271cfbad2edab/report.html": "aabc847a12560c45f84014380eeb68bd347d91042b4fd71a68ef24f5520d8e4f"},
    "sorted-oracle": {
        "ac9548018e847059a3d8/bounds.parquet": "200594bda5528b8e74c5fe845d771abf31bf8cd72ec4816a756a8acc0f179145",
        "ac9548018e847059a3d8/exact.parquet": "608e025f76b695df4c56c9c332a736f5986a72adec5c3361e5eb8adcddefbe10",
        "ac9548018e847059a3d8/manifest.json": "59123a8159dfd19a2bbdd7b5cec1da75d227afaefca55937bcce90d0911519b5",
        "ac9548018e847059a3d8/plan.parquet": "82ccae5dd7159c3c7380264095c2162b71ef0c38a1aed4727265b4836f0be985",
        "ac9548018e847059a3d8/report.html": "a9268628330b718252105124b922b7b22b1ac40b9c9354e9d8a9ebaae03f1819"},
}


def _synth(tmp_path: Path, name: str, *args: str) -> str:
    out = str(tmp_path / name)
    code, _, err = cli("synth", "--n", "60000", "--seed", "7", "--out", out, *args)
    assert code == 0, err
    for path in Path(out).rglob("*"):  # the fingerprint (so the run id) holds the files' mtimes
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return out


def _masked(path: Path, tmp_path: Path) -> bytes:
    data = path.read_bytes().replace(str(tmp_path).encode(), b"<tmp>")
    if path.name == "manifest.json":
        data = re.sub(rb'"(timings|versions)": \{[^}]*\}', rb'"\1": "masked"', data)
    elif path.name == "report.html":
        data = re.sub(rb"<h3>(Timings|Versions)</h3>.*?</table>", rb"<h3>\1</h3>masked", data, flags=re.S)
    return data


def _digests(run: str, tmp_path: Path) -> dict[str, str]:
    root = Path(run)
    return {f"{root.name}/{p.relative_to(root)}": hashlib.sha256(_masked(p, tmp_path)).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _run(tmp_path: Path, *argv: str, expect: int) -> str:
    code, out, err = cli("run", "--out", str(tmp_path / "runs"), *argv)
    assert code == expect, err
    return out.strip().splitlines()[-1]


def _sorted_oracle(tmp_path):
    return [_run(tmp_path, "--resource", _synth(tmp_path, "sorted"), "--oracle-column", "label", expect=0)]


def _shuffled_oracle_bands(tmp_path):
    res = _synth(tmp_path, "shuffled", "--order", "shuffled")
    return [_run(tmp_path, "--resource", res, "--oracle-column", "label", "--bands", expect=0)]


def _labels_imported(tmp_path):
    """Awaiting labels, then the labels of the task imported and the run completed."""
    res = _synth(tmp_path, "labeled", "--order", "shuffled")
    first = _run(tmp_path, "--resource", res, expect=3)
    task = pd.read_csv(Path(first) / "annotation_task.csv")
    truth = pd.read_parquet(res, columns=["key", "label"]).set_index("key")["label"]
    task.assign(label=truth.loc[task["key"]].to_numpy())[["key", "label"]].to_csv(tmp_path / "v.csv", index=False)
    store = str(tmp_path / "store")
    assert cli("labels", "import", "--store", store, "--annotator", "a", str(tmp_path / "v.csv"))[0] == 0
    return [first, _run(tmp_path, "--resource", res, "--labels", store, expect=0)]


def _judge_and_gold(tmp_path):
    """As the Makefile's demo: automatic verdicts from a judge column and a gold audit."""
    res = _synth(tmp_path, "judged", "--judge-accuracy", "0.9")
    return [_run(tmp_path, "--resource", res, "--judge-column", "judge", "--gold-budget", "100", expect=3)]


CASES = {"sorted-oracle": _sorted_oracle, "shuffled-oracle-bands": _shuffled_oracle_bands,
         "labels-imported": _labels_imported, "judge-and-gold": _judge_and_gold}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_artifact_of_a_run_keeps_its_bytes(tmp_path, case):
    got = {}
    for run in CASES[case](tmp_path):
        got.update(_digests(run, tmp_path))
    if os.environ.get("PRDIST_RECORD_DIGESTS"):
        print(f"\n    {case!r}: {got!r},")
    else:
        assert got == DIGESTS[case]
