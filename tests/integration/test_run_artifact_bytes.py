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
import pyarrow as pa
import pyarrow.parquet as pq
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

#: Per Parquet artifact, recorded on the same code: sha256 of its data and schema without the ``pandas``
#: metadata key (:func:`_table_digest`), and of what ``pandas.read_parquet`` gives (:func:`_frame_digest`).
TABLE_DIGESTS = {
    'judge-and-gold': {
        '6e17a5810e6230dfa0c2/bounds.parquet': (
            '2f73caa2dd440c78a7975d7f47971e37ea51a0cd43ef7af9e7a08930922f21fb',
            '6f2367234648f4fd7164e60eb945ffce0081c9bd304f43a9cc74be992a411f31'),
        '6e17a5810e6230dfa0c2/plan.parquet': (  # issue 30: the audit by judge class, and audit_class
            'c766249edb8539fc845b90e0a745da6b2293b853f672681c4bb71bfabc23aba5',
            '47bf448174e56b20038ccea1fd068e35e65d3be2ae521bcff61cf93c7b6ce1dc'),
    },
    'labels-imported': {
        'a895c6aee930743588bf/bounds.parquet': (
            '1f2be8fd49093be6a3555da216d2f71fd31fc38392f13dd165b1bfca9bfd2a12',
            '1e8f2db4d7af7a58036416fd59437b49289ceab4cbff6223880fc64788848c2f'),
        'a895c6aee930743588bf/plan.parquet': (
            'b639427756e6809dd3cb79520dda10ce6097b75abe81d0d64cc36cb42f5ec4d4',
            'ff7d2f2d254fbd642b37a53eee729020aefa1bb077eb9ec1c72e100bdb218793'),
        '6ef3811593904e8feb2a/bounds.parquet': (
            '9f7e7f482747962440744bbaeb7edc06e4ddc2af7a067da645788ad6f5c96465',
            '302066e52ddd86f4b3f6e58da6e3cf9d324bdebb3422994bada4d378e65de219'),
        '6ef3811593904e8feb2a/plan.parquet': (
            '282fb4baa17697cfda0bdef0f41a5a249f3929d9a07ff0fa0b7db7f3bb610958',
            'e4604ba6def0ca8749a714f65da350f6c5aece7c67219ed5575f5dd011edadff'),
    },
    'shuffled-oracle-bands': {
        '198e9ab271cfbad2edab/bands.parquet': (
            '53a89bf02599c6c71f83c793471599605e0245978a94738434bc0855bbd58a7b',
            '3ddbae1722415927ceb60732585b8e3bd4d50cf8937b92aefeac01c78d7d29a1'),
        '198e9ab271cfbad2edab/bounds.parquet': (
            '4b9ce221e4de9521e29cd78b36566a1bc8aed3ad40f6999fc3141121f860fd44',
            '39163ff73613e3f797048d025ea7cd2ea98d5cbb07939cebe6b5289e12f44fef'),
        '198e9ab271cfbad2edab/exact.parquet': (
            'd09a9d7ab721af659ddba070c3047a65875f19e7d794052f2ff3b13f3ed13a9a',
            '3a610fd9362185ff8762d4027a36cb4ee249969fbe7b2e2cb2ea3abde00c9f4e'),
        '198e9ab271cfbad2edab/plan.parquet': (
            'de2c93cc3ae52c36b156a651955ee83a8f7dfca60c141e0a088aa15f065e7975',
            '9e0bacdfbd83373b65d778cbd0f5cee1ac8902f944894fa8ddf18c82c117b1b0'),
    },
    'sorted-oracle': {
        'ac9548018e847059a3d8/bounds.parquet': (
            '4566702f053938331cf31dbba36f664e33f80926d5cc96f4e4e61d79efb7cc94',
            '6a90b79ef3a89b26b800db635a7a330499c9d39ba3acc9d8adc3c5f85a0de492'),
        'ac9548018e847059a3d8/exact.parquet': (
            '8f4641d4733915e88551d393fb8fa71e9144be03923da2359b3ae9adb55eba4a',
            '84cb770af992ed6fec1ca673510b465028b9cf03fa25c601b9f40f36b62dcee3'),
        'ac9548018e847059a3d8/plan.parquet': (
            'deb3c40760a44975259cbdaae4abf0c1fea02625efbfd251ec7a0c060060797d',
            'a3ac729ea88046c891adecbd98c6923234ebca2a441e00f1acb3e9b18c06694f'),
    },
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


def _table_digest(path: Path) -> str:
    """sha256 of a Parquet artifact's data and schema without its ``pandas`` metadata key (the
    Arrow IPC stream of the table): what stays when a writer changes only that key."""
    table = pq.read_table(path)
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != b"pandas"}
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema.with_metadata(meta)) as writer:
        writer.write_table(table.replace_schema_metadata(meta))
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _frame_digest(path: Path) -> str:
    """sha256 of what ``pandas.read_parquet`` gives for a Parquet artifact: its dtypes, index,
    attributes and values."""
    frame = pd.read_parquet(path)
    about = repr((list(frame.columns), [str(t) for t in frame.dtypes], repr(frame.index), sorted(frame.attrs.items())))
    values = pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes()
    return hashlib.sha256(about.encode() + values).hexdigest()


def _parquet_digests(run: str) -> dict[str, tuple[str, str]]:
    root = Path(run)
    return {f"{root.name}/{p.relative_to(root)}": (_table_digest(p), _frame_digest(p)) for p in sorted(root.glob("*.parquet"))}


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
    got, tables = {}, {}
    for run in CASES[case](tmp_path):
        got.update(_digests(run, tmp_path))
        tables.update(_parquet_digests(run))
    if os.environ.get("PRDIST_RECORD_DIGESTS"):
        print(f"\n    {case!r}: {got!r},\n    {case!r}: {tables!r},")
    else:
        assert tables == TABLE_DIGESTS[case]
        assert got == DIGESTS[case]
