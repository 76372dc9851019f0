"""Classes of defects of the third adversarial pass (issue 31), each tested as a class.

- **Pipes and closed outputs**: every command keeps its exit code and its stderr lines when the
  reader of its output goes away (``| head``) or its output is closed (``>&-``).
- **Outputs never land on inputs or committed runs**: every option that writes is refused (exit 2,
  nothing written) on the resource, the label store and every committed run directory.
- **Terminal and XML sanitising**: every string from outside that reaches a terminal goes through
  one sanitiser; the Label Studio config is well-formed XML whatever the item text holds.
- **Resource guards before allocating**: plan size, huge numbers, decompressed size.

"At once" is observed, not timed: a too-large plan computes no exact power of its grid, and a
gzip bomb never reaches the parser.
"""

from __future__ import annotations

import contextlib
import os
import time
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.small_release import ranked_scores_and_labels

PRDIST = str(Path(sys.executable).with_name("prdist"))


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` in bash (``set -o pipefail``: the pipeline's code is prdist's), unbuffered as deploy/Dockerfile runs it."""
    env = {"PATH": f"{Path(PRDIST).parent}:/usr/bin:/bin", "HOME": str(cwd), "PYTHONUNBUFFERED": "1",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    return subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def _workspace(root: Path) -> None:
    """A resource, a label file and a run awaiting labels under ``root``: what every command needs."""
    import pyarrow as pa

    from tests.support.small_release import write_release

    scores, labels = ranked_scores_and_labels(4000, seed=3)
    keys = [f"k{i}" for i in range(scores.size)]
    write_release(root / "res", pa.table({"key": keys, "score": scores, "label": labels}), row_group_size=1024)
    (root / "answers.csv").write_text("key,label\n" + "".join(f"k{i},{i % 2}\n" for i in range(50)))
    (root / "items.csv").write_text("id,conf\n" + "".join(f"i{i},{1 - i / 100}\n" for i in range(100)))
    (root / "store0").mkdir()  # an empty store: exists, holds nothing yet
    done = _shell("prdist run --resource res --labels store0 --out runs --eps 0.1 --window 20", root)
    assert done.returncode == 3, done.stderr
    assert _shell("prdist labels import --store store0 answers.csv", root).returncode == 0
    assert _shell("prdist synth --n 1000 --seed 1 --out kb", root).returncode == 0  # a resource prdist wrote


#: Every command, as a template ({m}: a name per try, for create-only outputs) and its exit code.
COMMANDS = {
    "budget": ("prdist budget --n 1000000", 0),
    "budget --json": ("prdist budget --n 1000000 --json", 0),
    "synth": ("prdist synth --n 1000 --seed 1 --out synth-{m}", 0),
    "run (awaiting labels)": ("prdist run --resource res --labels store0 --out runs --eps 0.1 --window 20", 3),
    "labels import": ("prdist labels import --store store-{m} answers.csv", 0),
    "labels export": ("prdist labels export --run $(dirname $(ls runs/*/manifest.json | head -1)) --out task-{m}.csv", 0),
    "labels status": ("prdist labels status --store store0", 0),
    "ingest": ("prdist ingest items.csv --out ingested-{m} --score conf --key id", 0),
    "history": ("prdist history --runs runs --out history-{m}", 0),
    "compare (awaiting labels)": ("prdist compare --system a=res --labels store0 --budget 20 --seed 0 --out cmp-{m}", 3),
    "bad input": ("prdist budget --n 0", 2),
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipes")
    _workspace(root)
    return root


def _stderr_lines(text: str) -> list[str]:
    """prdist's stderr lines, without the in-process note (said only when a flow ran: not on a committed rerun)."""
    return [line for line in text.splitlines() if line.startswith("prdist") and "running in-process" not in line]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_keeps_its_exit_code_and_stderr_when_its_reader_goes_away(name, workspace):
    template, expected = COMMANDS[name]
    plain = _shell(template.format(m="plain") + " > out.txt", workspace)
    assert plain.returncode == expected, plain.stderr
    assert "Traceback" not in plain.stderr
    for mode, tail in (("head", " | head -0"), ("closed", " >&-"), ("head1", " | head -1 > /dev/null")):
        done = _shell(template.format(m=mode) + tail, workspace)
        assert done.returncode == expected, (mode, done.stderr)
        assert "Traceback" not in done.stderr and "Error" not in done.stderr.replace("prdist: error:", ""), (mode, done.stderr)
        assert len(_stderr_lines(done.stderr)) == len(_stderr_lines(plain.stderr)), (mode, done.stderr, plain.stderr)


# --------------------------------------------------------------------------------------------
# Resource guards before allocating


def _int_options():
    """(command words, option string) of every whole-number option of every command."""
    import argparse

    from prdist.cli import build_parser, count
    from tests.integration.test_reliability import _commands

    for words, parser in _commands(build_parser()):
        for action in parser._actions:
            if action.type is count:
                yield " ".join(words), action.option_strings[-1]


#: A valid command line per command that has whole-number options ({root}: the workspace).
INT_BASE = {
    "budget": "budget --n 1000000",
    "synth": "synth --n 1000 --seed 1 --out {root}/synth-big",
    "run": "run --resource {root}/res --labels {root}/store0 --out {root}/runs-big",
    "compare": "compare --system a={root}/res --labels {root}/store0 --budget 20 --seed 0 --out {root}/cmp-big --distribution top-k --k 5",
}
INT_OPTIONS = sorted(_int_options())


def test_the_table_of_whole_number_options_covers_every_command():
    assert {command for command, _ in INT_OPTIONS} == set(INT_BASE)
    assert len(INT_OPTIONS) >= 12


@pytest.mark.parametrize("command, option", INT_OPTIONS)
def test_a_number_beyond_int64_is_refused_in_one_line_by_every_option(command, option, workspace):
    from tests.integration.test_bad_input import assert_refused

    argv = INT_BASE[command].format(root=workspace).split() + [option, str(10**23)]
    assert_refused(argv, says=[option, "larger than prdist can count", "smaller number"], watched=[workspace])


def test_ranks_beyond_int64_are_refused_in_one_line(workspace):
    from tests.integration.test_bad_input import assert_refused

    assert_refused(["history", "--runs", str(workspace / "runs"), "--ranks", f"10,{10**23}"],
                   says=["--ranks", "2^63 - 1"], watched=[workspace])


@pytest.mark.parametrize("argv, says", [
    (["budget", "--n", str(10**12), "--eps", "1e-5"], ["grid index", "eps=8e-05 fits"]),
    (["budget", "--n", str(10**12), "--eps", "3e-5"], ["45,373,303 ranks", "eps=6e-05 fits"]),
    (["budget", "--n", str(10**11), "--window", str(10**11)], ["100,000,000,000 ranks", "smaller window"]),
    (["budget", "--n", "1000", "--eps", "1e-300"], ["grid index 6.95e+302", "larger eps"]),
    (["budget", "--n", str(2**63 - 1), "--window", str(2**63 - 1)], ["ranks to label", "smaller window"]),
])
def test_a_plan_too_large_to_hold_is_refused_before_anything_is_allocated(argv, says, tmp_path):
    # Under a 2 GB address-space cap, as the issue found it: the old code ran out of memory
    # (or spent minutes in exact powers); the refusal comes from the parameters alone, at once:
    # not one exact power of the grid is computed (the first one ends the process, exit 70).
    code = (f"import os, sys\nfrom prdist.paula.grid import GeometricGrid\n"
            f"def computed(*a):\n    open('exact-power', 'w').close(); os._exit(70)\n"
            f"GeometricGrid._power_bracket = computed\n"
            f"from prdist.cli import console_main\nsys.argv = ['prdist', *{argv!r}]\nconsole_main()\n")
    done = subprocess.run(["bash", "-c", f"ulimit -v 2000000; exec {sys.executable} -c \"$0\"", code],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert not (tmp_path / "exact-power").exists(), "an exact power of the grid was computed before the refusal"
    assert done.returncode == 2 and done.stdout == "", done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith("prdist: error: The PAULA plan of n=") and all(s in line for s in says), line


@pytest.mark.parametrize("command, option", INT_OPTIONS)
def test_the_largest_count_is_run_or_refused_by_every_option_never_a_crash(command, option, workspace):
    from tests.support.cli_run import cli

    argv = INT_BASE[command].format(root=workspace).split() + [option, str(2**63 - 1)]
    argv = [word.replace("-big", f"-max{option}") for word in argv]
    code, out, err = cli(*argv)
    assert code in (0, 2, 3) and "Traceback" not in err and "failed:" not in err, err


# --------------------------------------------------------------------------------------------
# Outputs never land on inputs or committed runs

#: Every command that writes, with its output as {target} ({root}: the workspace; {run}: a committed run).
WRITERS = {
    "run": "run --resource {root}/res --labels {root}/store0 --out {target} --eps 0.1 --window 20",
    "synth": "synth --n 100 --seed 1 --out {target}",
    "compare": "compare --system a={root}/res --labels {root}/store0 --budget 20 --seed 0 --out {target}",
    "ingest": "ingest {root}/items.csv --out {target} --score conf --key id",
    "history": "history --runs {root}/runs --out {target}",
    "labels export": "labels export --run {run} --out {target}",
    "labels fill": "labels fill {root}/answers.csv --rest skip --out {target}",
    "labels import": "labels import --store {target} {root}/answers.csv",
    "release": "release --resource {root}/res --current {target} --api-url http://127.0.0.1:9/api",
}
#: Every kind of place an output must not land on ({run}: a committed run directory).
PROTECTED = {
    "the resource": "{root}/res",
    "inside a resource prdist wrote": "{root}/kb/out.csv",
    "the label store": "{root}/store0",
    "inside the label store": "{root}/store0/out",
    "a committed run": "{run}",
    "a committed run's manifest": "{run}/manifest.json",
    "inside a committed run": "{run}/new/out.csv",
    "a runs root, as a store": "{root}/runs",
}


def test_the_table_of_writers_covers_every_command_that_writes():
    from prdist.cli import OUTPUT_OPTIONS, build_parser
    from tests.integration.test_reliability import _commands

    writes = {" ".join(words) for words, parser in _commands(build_parser())
              if any(a.dest == "out" for a in parser._actions) and words != ("release",)}  # release only names it in an event
    assert writes | {"labels import", "release"} == set(OUTPUT_OPTIONS) == set(WRITERS)  # release --current: a pointer file


def _committed_run(root: Path) -> Path:
    return next(path.parent for path in sorted((root / "runs").glob("*/manifest.json")))


CASES = [(w, p) for w in sorted(WRITERS) for p in sorted(PROTECTED)
         if not (w == "labels import" and p == "the label store")  # importing into the store is what it is for
         and not (w != "labels import" and p == "a runs root, as a store")]  # a runs root is where runs go


@pytest.mark.parametrize("writer, place", CASES, ids=[f"{w}-{p}" for w, p in CASES])
def test_no_output_lands_on_a_resource_a_store_or_a_committed_run(writer, place, workspace):
    from tests.integration.test_bad_input import assert_refused

    run = _committed_run(workspace)
    target = PROTECTED[place].format(root=workspace, run=run)
    argv = WRITERS[writer].format(root=workspace, run=run, target=target).split()
    says = {"resource": "Parquet dataset", "label store": "label store", "committed": "committed run directory",
            "runs root": "not label files"}
    assert_refused(argv, says=[next(v for k, v in says.items() if k in place), "Choose a place outside it" if
                               "runs root" not in place else "directory of its own"], watched=[workspace])


@pytest.mark.parametrize("argv, says", [
    ("run --resource {root}/res --labels {root}/same --out {root}/same", "--labels"),
    ("compare --system a={root}/res --labels {root}/same --budget 20 --seed 0 --out {root}/same", "--labels"),
    ("compare --system a={root}/res --labels {root}/store1 --budget 20 --seed 0 --out {root}/x --exhaustive {root}/x",
     "--exhaustive"),
    ("labels import --store {root}/answers.csv {root}/answers.csv", "the label file"),
])
def test_no_output_lands_on_what_its_own_command_reads(argv, says, workspace):
    from tests.integration.test_bad_input import assert_refused

    assert_refused(argv.format(root=workspace).split(), says=[says, "which this command reads"], watched=[workspace])


def test_outputs_beside_the_protected_places_are_written(workspace):
    from tests.support.cli_run import cli

    run = _committed_run(workspace)
    code, out, err = cli("labels", "export", "--run", str(run), "--out", str(workspace / "task-beside.csv"))
    assert code == 0, err
    code, out, err = cli("labels", "import", "--store", str(workspace / "store0"), str(workspace / "answers.csv"))
    assert code == 0, err


# --------------------------------------------------------------------------------------------
# Terminal and XML sanitising

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[1A\u202e\x9b"


def _unshowable(text: str) -> list[str]:
    """Characters in ``text`` a terminal would act on (every control but the line break)."""
    import re

    return re.findall("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)


def _hostile_store(root: Path) -> Path:
    """A store whose annotators and (disputed) keys carry terminal escape sequences."""
    import csv

    store, answers = root / "hostile-store", root / "hostile.csv"
    if not store.exists():
        with answers.open("w", newline="") as fh:
            rows = csv.writer(fh)
            rows.writerow(["key", "label", "annotator"])
            rows.writerows([[f"k{ESCAPES}", 1, f"alice{ESCAPES}"], [f"k{ESCAPES}", 0, "bob\x1b[31m"], ["k1", 1, "carol\u202e"]])
        from tests.support.cli_run import cli

        code, out, err = cli("labels", "import", "--store", str(store), str(answers))
        assert code == 0, err
    return store


def _series_run(root: Path) -> Path:
    """Two releases of a series named with escape sequences, the second certainly worse."""
    runs = root / "hostile-runs"
    if not runs.exists():
        import pyarrow as pa

        from tests.support.cli_run import cli
        from tests.support.small_release import write_release

        scores, _ = ranked_scores_and_labels(4000, seed=3)
        write_release(root / "worse", pa.table({"key": [f"k{i}" for i in range(4000)], "score": scores,
                                                "label": [0] * 4000}), row_group_size=1024)
        for release in ("res", "worse"):
            code, out, err = cli("run", "--resource", str(root / release), "--out", str(runs), "--series", f"kb{ESCAPES}",
                                 "--oracle-column", "label", "--eps", "0.1", "--window", "20")
            assert code == 0, err
    return runs


#: Every command that prints strings from outside, with what it prints them from.
PRINTERS = {
    "labels status: annotators and disputed keys": lambda root: ["labels", "status", "--store", str(_hostile_store(root))],
    "history: series": lambda root: ["history", "--runs", str(_series_run(root)), "--out", str(root / "hostile-history")],
    "an error quoting a label file": lambda root: ["labels", "import", "--store", str(root / "never"),
                                                   str(_write(root / "bad-verdict.csv", f"key,label\nk1,yes{ESCAPES}\n"))],
    "an error quoting a column": lambda root: ["ingest", str(_write(root / "bad-score.csv", f"id,conf{ESCAPES}\ni1,0.5\n")),
                                               "--out", str(root / "never-ingested"), "--score", "conf", "--key", "id"],
    "an error quoting a key": lambda root: ["labels", "import", "--store", str(root / "never"), "--resource", str(root / "res"),
                                            str(_write(root / "foreign-key.csv", f"key,label\nforeign{ESCAPES},1\n"))],
    "history: run ids from manifests": lambda root: ["history", "--runs", str(_tampered_runs(root))],
    "history: a damaged run directory's name": lambda root: ["history", "--runs", str(_damaged_runs(root))],
    "synth: its output path": lambda root: ["synth", "--n", "100", "--seed", "1", "--out", str(root / f"synth{ESCAPES}")],
    "ingest: its output path": lambda root: ["ingest", str(root / "items.csv"), "--out", str(root / f"ingested{ESCAPES}"),
                                             "--score", "conf", "--key", "id"],
    "labels export: its output path": lambda root: ["labels", "export", "--run", str(_committed_run(root)),
                                                    "--out", str(root / f"task{ESCAPES}.csv")],
    "labels fill: its output path": lambda root: ["labels", "fill", str(_write(root / "fill-task.csv", "key,label\nk1,\n")),
                                                  "--rest", "cannot judge", "--out", str(root / f"filled{ESCAPES}.csv")],
    "labels import: the store's new file": lambda root: ["labels", "import", "--store", str(root / f"store{ESCAPES}"),
                                                         str(root / "answers.csv")],
    "run: its run directory": lambda root: ["run", "--resource", str(root / "res"), "--out", str(root / f"runs{ESCAPES}"),
                                            "--oracle-column", "label", "--eps", "0.1", "--window", "20"],
    "compare: its run directory": lambda root: ["compare", "--system", "a=" + str(root / "res"), "--labels", str(root / "store0"),
                                                "--budget", "20", "--seed", "0", "--out", str(root / f"cmp{ESCAPES}")],
}
#: Commands that print no string from outside: budget (numbers from its options), release (its
#: --dry-run event is JSON, whose control characters are escaped; sending needs a Prefect server).
PRINTS_NOTHING_FROM_OUTSIDE = {"budget", "release"}


def test_the_table_of_printers_covers_every_command():
    from prdist.cli import build_parser
    from tests.integration.test_reliability import _commands

    commands = {" ".join(words) for words, _ in _commands(build_parser())}
    printed = {name.split(":")[0] for name in PRINTERS if ":" in name}
    assert printed | PRINTS_NOTHING_FROM_OUTSIDE == commands


def _tampered_runs(root: Path) -> Path:
    """The hostile series' runs, copied, each manifest's run id holding escape sequences."""
    import json
    import shutil

    runs = root / "tampered-runs"
    if not runs.exists():
        shutil.copytree(_series_run(root), runs)
        for manifest in runs.glob("*/manifest.json"):
            record = json.loads(manifest.read_text())
            manifest.write_text(json.dumps({**record, "run_id": record["run_id"] + ESCAPES}))
    return runs


def _damaged_runs(root: Path) -> Path:
    """The hostile series' runs, copied, beside a damaged run directory named with escape sequences."""
    import shutil

    runs = root / "damaged-runs"
    if not runs.exists():
        shutil.copytree(_series_run(root), runs)
        (runs / f"bad{ESCAPES}").mkdir()
        (runs / f"bad{ESCAPES}" / "manifest.json").write_text("{")
    return runs


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("printer", sorted(PRINTERS))
def test_every_string_from_outside_reaches_the_terminal_sanitised(printer, workspace):
    from tests.support.cli_run import cli

    code, out, err = cli(*PRINTERS[printer](workspace))
    assert code in (0, 2, 3), err
    assert _unshowable(out + err) == [], (out, err)
    assert "\\x1b]0;owned\\x07" in out + err  # shown, escaped: the user sees what the input holds


def test_the_label_studio_config_is_well_formed_xml_whatever_the_item_columns_hold(workspace, tmp_path):
    import json
    import xml.etree.ElementTree as ET

    import pyarrow as pa

    from tests.support.cli_run import cli
    from tests.support.small_release import write_release

    scores, labels = ranked_scores_and_labels(300, seed=5)
    write_release(tmp_path / "res", pa.table({"key": [f"k{i}" for i in range(300)], "score": scores,
                                              "note\x01\x0b": [f"text\x02{i}" for i in range(300)]}), row_group_size=100)
    code, out, err = cli("run", "--resource", str(tmp_path / "res"), "--out", str(tmp_path / "runs"))
    assert code == 3, err
    run = out.strip().splitlines()[-1]
    code, out, err = cli("labels", "export", "--run", run, "--format", "label-studio", "--out", str(tmp_path / "task.json"))
    assert code == 0, err
    config = ET.fromstring((tmp_path / "task.json.xml").read_text())  # well-formed
    referenced = {text.get("value")[1:] for text in config.iter("Text")}
    tasks = json.loads((tmp_path / "task.json").read_text())
    assert referenced == set(tasks[0]["data"]) and "note\ufffd\ufffd" in referenced
    assert tasks[0]["data"]["note\ufffd\ufffd"].startswith("text\x02")  # item text itself travels as it is, in JSON


def test_a_gzip_bomb_is_refused_before_anything_is_parsed(tmp_path, monkeypatch):
    import gzip

    from prdist.dataflow.ranks import ingest as ingest_module

    from tests.integration.test_bad_input import assert_refused

    member = gzip.compress(b"k,0.5\n" * (1 << 17), 9)  # 768 KiB of rows in about a kilobyte
    bomb = tmp_path / "bomb.csv.gz"
    bomb.write_bytes(gzip.compress(b"id,conf\n") + member * 1400)  # 1.03 GiB from 1.6 MB
    parsed = []

    def parse(url, *args, **kwargs):  # the old code parsed the bomb for 13 s and ran out of memory
        parsed.append(url)
        raise AssertionError(f"{url} was parsed")

    monkeypatch.setattr(ingest_module, "read_rows", parse)
    assert_refused(["ingest", str(bomb), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id"],
                   says=["bomb.csv.gz decompresses to more than 1,073,741,824 bytes", "Split the data into smaller files"],
                   watched=[tmp_path])
    assert parsed == [], "the bomb was parsed before it was refused"


def test_a_small_compressed_input_is_still_ingested(tmp_path):
    import gzip

    from tests.support.cli_run import cli

    (tmp_path / "kb.csv.gz").write_bytes(gzip.compress(b"id,conf\n" + b"".join(b"i%d,%f\n" % (i, i / 100) for i in range(100))))
    code, out, err = cli("ingest", str(tmp_path / "kb.csv.gz"), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id")
    assert code == 0 and "100 items" in err, err


DAMAGE = {
    "truncated manifest": lambda run: (run / "manifest.json").write_bytes((run / "manifest.json").read_bytes()[:40]),
    "non-JSON manifest": lambda run: (run / "manifest.json").write_text("not json\n"),
    "a manifest that is a list": lambda run: (run / "manifest.json").write_text("[1, 2]\n"),
    "a manifest without its fields": lambda run: (run / "manifest.json").write_text('{"params": {"method": "paula"}, "input": {}}'),
    "truncated plan": lambda run: (run / "plan.parquet").write_bytes((run / "plan.parquet").read_bytes()[:100]),
    "a release that is text": lambda run: _edit_manifest(run, release="x"),
    "a place that is text": lambda run: _edit_manifest(run, release={"place": "abc"}),
    "an input without its fingerprint": lambda run: _edit_manifest(run, input={"url": "file:///x"}),
    "a fingerprint that is an object": lambda run: _edit_manifest(run, input={"url": "file:///x", "fingerprint": {"a": 1}}),
    "a series that is an object": lambda run: _edit_manifest(run, series={"a": 1}),
    "an n beyond int64": lambda run: _edit_manifest(run, n=10**30),
    "a negative n": lambda run: _edit_manifest(run, n=-5),
    "a run id that is a list": lambda run: _edit_manifest(run, run_id=[1]),
    "cut-offs that are text": lambda run: _edit_manifest(run, cutoffs="x"),
    "a manifest that is not UTF-8": lambda run: (run / "manifest.json").write_bytes(b'{"run_id": "\xff"}'),
}


def _edit_manifest(run: Path, **fields) -> None:
    import json

    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, **fields}))


def test_history_skips_every_damaged_run_directory_and_names_them_in_one_line(workspace, tmp_path):
    import shutil

    from tests.support.cli_run import cli

    runs = tmp_path / "runs"
    shutil.copytree(_series_run(workspace), runs)
    good = sorted(p.parent for p in runs.glob("*/manifest.json"))
    for name, damage in DAMAGE.items():
        copy = runs / name.replace(" ", "-")
        shutil.copytree(good[0], copy)
        damage(copy)
    code, out, err = cli("history", "--runs", str(runs))
    assert code == 0, err
    assert f"{len(good)} run(s)" in out
    warning, = [line for line in err.splitlines() if line.startswith("prdist")]
    assert warning.startswith(f"prdist: warning: {len(DAMAGE)} run directories under {runs} skipped, damaged")
    named = sorted(name.replace(" ", "-") for name in DAMAGE)
    assert f": {', '.join(named[:5])} and {len(DAMAGE) - 5} more. Move them aside" in warning, warning


def test_a_killed_ingests_staging_directory_is_removed_by_the_next_and_a_live_ones_kept(tmp_path):
    import os

    from tests.support.cli_run import cli
    from prdist.dataflow.io.publishing import STALE_SECONDS, staging_path

    (tmp_path / "kb.csv").write_text("id,conf\n" + "".join(f"i{i},{i / 100}\n" for i in range(100)))
    # A real process that dies: its staging directories are what a killed ingest leaves.
    child = subprocess.Popen([sys.executable, "-c", "import os, sys\nfrom prdist.dataflow.io.publishing import staging_path\n"
                              f"for kind in ('staging', 'ingest'): print(staging_path({str(tmp_path / 'kb')!r}, kind))\n"],
                             stdout=subprocess.PIPE, text=True)
    dead = child.communicate(timeout=60)[0].split()
    live = staging_path(str(tmp_path / "other"), "staging")  # this process's: alive
    recent = dead[0].replace("prdist-staging", "prdist-ingest").replace(".kb.", ".recent.")
    old = time.time() - STALE_SECONDS - 60
    for path in [*dead, live, recent]:
        os.makedirs(path)
        (Path(path) / "part.0.parquet").write_bytes(b"x")
        if path != recent:
            os.utime(path, (old, old))
    code, out, err = cli("ingest", str(tmp_path / "kb.csv"), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id")
    assert code == 0, err
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert left == sorted([Path(live).name, Path(recent).name])  # the dead ones went; a live or recent one stays


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_a_prefect_server_that_dies_after_the_commit_costs_the_artifacts_not_the_run(workspace, tmp_path):
    import signal
    import urllib.request

    port = _free_port()
    env = {"PATH": f"{Path(PRDIST).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / "prefect"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_CLIENT_MAX_RETRIES": "1"}  # the default 5 retries: ~150 s
    server = subprocess.Popen([str(Path(PRDIST).with_name("prefect")), "server", "start", "--host", "127.0.0.1", "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        runs = tmp_path / "runs"
        command = subprocess.Popen([PRDIST, "run", "--resource", str(workspace / "res"), "--out", str(runs), "--oracle-column",
                                    "label", "--eps", "0.1", "--window", "20"], env={**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not list(runs.glob("*/manifest.json")) and command.poll() is None:
            time.sleep(0.02)
        os.killpg(server.pid, signal.SIGKILL)  # the server dies once the run has committed
        out, err = command.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    run = next(runs.glob("*/manifest.json")).parent
    assert command.returncode == 0, err
    assert out.strip().splitlines()[-1] == str(run)
    assert "Traceback" not in err, err


def test_outputs_beside_loose_parquet_files_and_repeated_outputs_are_written(workspace, tmp_path):
    import shutil

    from tests.support.cli_run import cli

    run = _committed_run(workspace)
    shutil.copy(workspace / "res" / "part-0.parquet", tmp_path / "kb.parquet")  # a working directory, not a dataset
    (tmp_path / "notes.txt").write_text("mine\n")
    for _ in range(2):  # an export replaces itself; history rewrites its own output
        code, out, err = cli("labels", "export", "--run", str(run), "--out", str(tmp_path / "task.parquet"))
        assert code == 0, err
        code, out, err = cli("history", "--runs", str(workspace / "runs"))
        assert code == 0, err
    code, out, err = cli("labels", "export", "--run", str(run), "--out", str(tmp_path / "task.csv"))
    assert code == 0, err


# --------------------------------------------------------------------------------------------
# Ingest inputs: every format, every hostile shape

def _text(rows: list[str], sep: str) -> str:
    """A CSV/TSV file: the header, then ``rows`` (fields separated by ``,``, turned into ``sep``)."""
    return "".join(f"{line.replace(',', sep)}\n" for line in ["id,conf", *rows])


def _jsonl(*lines: str) -> str:
    return "".join(f"{line}\n" for line in lines)


def _table(ids, scores):
    import pyarrow as pa

    return pa.table({"id": ids, "conf": scores})


def _delimited(rows: list[str]) -> dict:
    return {"csv": _text(rows, ","), "tsv": _text(rows, "\t")}


#: Each hostile shape as a file of each format that can hold it, and what the refusal says
#: ({line}: the line of the hostile row: 3 after a CSV/TSV header, 2 in JSONL and Parquet).
HOSTILE = {
    "a missing key": ({**_delimited(["a,0.9", ",0.5", "c,0.1"]),
                       "jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": null, "conf": 0.5}', '{"id": "c", "conf": 0.1}'),
                       "parquet": _table(["a", None, "c"], [0.9, 0.5, 0.1])}, ["1 bad row(s)", "line(s) {line};"]),
    "a score that is text": ({**_delimited(["a,0.9", "b,high", "c,0.1"]),
                              "jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "b", "conf": "high"}', '{"id": "c", "conf": 0.1}'),
                              "parquet": _table(["a", "b", "c"], ["0.9", "high", "0.1"])}, ["1 bad row(s)", "line(s) {line};"]),
    "an infinite score": ({**_delimited(["a,0.9", "b,inf", "c,0.1"]),
                           "jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "b", "conf": 1e999}', '{"id": "c", "conf": 0.1}'),
                           "parquet": _table(["a", "b", "c"], [0.9, float("inf"), 0.1])}, ["1 bad row(s)", "line(s) {line};"]),
    "true/false as scores": ({"jsonl": _jsonl('{"id": "a", "conf": true}', '{"id": "b", "conf": false}'),
                              "parquet": _table(["a", "b"], [True, False])}, ["line(s) 1, 2", "holds true/false, not scores"]),
    "true/false among scores": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "b", "conf": true}')},
                                ["line(s) 2", "holds true/false, not scores"]),
    "a key that is a list": ({"jsonl": _jsonl('{"id": ["a"], "conf": 0.9}', '{"id": ["b", "c"], "conf": 0.5}'),
                              "parquet": _table([["a"], ["b", "c"]], [0.9, 0.5])}, ["line 1", "not text or a whole number"]),
    "a key that is an object": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": {"b": 1}, "conf": 0.5}')},
                                ["line 2", "field 'id'"]),
    "a key with a decimal point": ({"jsonl": _jsonl('{"id": 1.5, "conf": 0.9}', '{"id": 2.5, "conf": 0.5}'),
                                    "parquet": _table([1.5, 2.5], [0.9, 0.5])}, ["line 1", "a number with a decimal point, not text"]),
    "a key that is true/false": ({"jsonl": _jsonl('{"id": true, "conf": 0.9}', '{"id": false, "conf": 0.5}'),
                                  "parquet": _table([True, False], [0.9, 0.5])}, ["line 1", "is true/false, not text or a whole number"]),
    "a key beyond int64": ({"jsonl": _jsonl('{"id": 1, "conf": 0.9}', f'{{"id": {2**70}, "conf": 0.5}}'),
                            "parquet": None}, ["line(s) 2", "beyond 2^63 - 1"]),
    "an unsigned key beyond int64": ({"jsonl": _jsonl('{"id": 1, "conf": 0.9}', f'{{"id": {2**63 + 1}, "conf": 0.5}}'),
                                      "parquet": None}, ["line(s) 2", "beyond 2^63 - 1"]),
    "a score beyond int64": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9}', f'{{"id": "b", "conf": {10**30}}}')},
                             ["line(s) 2", "beyond 2^63 - 1"]),
    "numbers and text in one field": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9, "x": 1}', '{"id": "b", "conf": 0.5, "x": "t"}')},
                                      ["field 'x'", "a number at line 1 but text at line 2"]),
    "a record nested too deeply": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "b", "x": ' + "[" * 200_000 + "]" * 200_000 + "}")},
                                   ["line 2", "nested too deeply"]),
    "a line that is not JSON": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "b", "conf": 0.5')}, ["line 2", "not valid JSON"]),
    "a line that is not an object": ({"jsonl": _jsonl('{"id": "a", "conf": 0.9}', '["b", 0.5]')}, ["line 2", "JSON object was expected"]),
    "not UTF-8": ({"csv": b"id,conf\na,0.9\n\xff\xfe,0.5\n", "tsv": b"id\tconf\na\t0.9\n\xff\xfe\t0.5\n",
                   "jsonl": b'{"id": "a", "conf": 0.9}\n{"id": "\xff", "conf": 0.5}\n'}, ["not UTF-8"]),
    "a row with too many fields": (_delimited(["a,0.9", "b,0.5,7", "c,0.1"]), ["Expected 2 fields in line 3, saw 3"]),
    "a key held by two rows": ({**_delimited(["a,0.9", "a,0.5", "c,0.1"]),
                                "jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "a", "conf": 0.5}'),
                                "parquet": _table(["a", "a"], [0.9, 0.5])}, ["the key is not unique: 1 key(s)", "e.g. 'a'", "--duplicates keep-highest"]),
    "no rows": ({**_delimited([]), "jsonl": "\n", "parquet": _table([], [])}, ["holds no rows"]),
    "a quoted line break before a bad row": ({"csv": 'id,conf,note\na,0.9,"one\ntwo\nthree"\nb,high,x\n'}, ["line(s) 5;"]),
    "a file that is not Parquet": ({"parquet": b"id,conf\na,0.9\n"}, ["not a readable Parquet file"]),
}
#: A file of each format that ingest reads: the control of the table above.
GOOD = {**_delimited(["a,0.9", "b,0.5", "c,0.1"]),
        "jsonl": _jsonl('{"id": "a", "conf": 0.9}', '{"id": "b", "conf": 0.5}', '{"id": "c", "conf": 0.1}'),
        "parquet": _table(["a", "b", "c"], [0.9, 0.5, 0.1])}
#: The hostile shapes of an unsigned key beyond int64 as Parquet, which pyarrow writes from a typed array.
_UNSIGNED = {"a key beyond int64": 2**64 - 1, "an unsigned key beyond int64": 2**63 + 1}
#: How each text format is also wrapped: a gzip file and a zip archive of one file.
WRAPPERS = ("gz", "zip")


def _hostile_cases():
    for shape, (contents, _) in sorted(HOSTILE.items()):
        for fmt in sorted(contents):
            yield shape, fmt
            if fmt in ("csv", "jsonl"):
                for wrapper in WRAPPERS:
                    yield shape, f"{fmt}.{wrapper}"


HOSTILE_CASES = list(_hostile_cases())


def _ingest_input(directory: Path, contents: dict, fmt: str, shape: str = "") -> Path:
    """The file of ``contents`` in format ``fmt`` (``csv.gz``, ``jsonl.zip``: wrapped) in ``directory``."""
    import gzip
    import zipfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    base, _, wrapper = fmt.partition(".")
    content = contents[base]
    path = directory / f"in.{fmt}"
    if base == "parquet" and content is None:
        pq.write_table(pa.table({"id": pa.array([1, _UNSIGNED[shape]], pa.uint64()), "conf": [0.9, 0.5]}), path)
    elif base == "parquet" and not isinstance(content, bytes):
        pq.write_table(content if content.num_rows else pa.table({"id": pa.array([], pa.string()), "conf": pa.array([], pa.float64())}), path)
    else:
        data = content.encode() if isinstance(content, str) else content
        if wrapper == "gz":
            data = gzip.compress(data)
        elif wrapper == "zip":
            import io

            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.writestr(f"in.{base}", data)
            data = buffer.getvalue()
        path.write_bytes(data)
    return path


def test_the_table_of_hostile_ingest_shapes_covers_every_format():
    from prdist.dataflow.ranks.ingest import FORMATS

    formats = {fmt.partition(".")[0] for _, fmt in HOSTILE_CASES} | {fmt.partition(".")[2] for _, fmt in HOSTILE_CASES}
    assert set(FORMATS) | set(WRAPPERS) <= formats
    assert len(HOSTILE_CASES) >= 80


@pytest.mark.parametrize("shape, fmt", HOSTILE_CASES, ids=[f"{s}-{f}" for s, f in HOSTILE_CASES])
def test_every_hostile_ingest_input_is_refused_in_one_line_naming_the_file_and_the_place(shape, fmt, tmp_path):
    from tests.integration.test_bad_input import assert_refused

    source = _ingest_input(tmp_path, HOSTILE[shape][0], fmt, shape)
    line = 3 if fmt.partition(".")[0] in ("csv", "tsv") else 2
    says = [f"{source}"] + [s.format(line=line) for s in HOSTILE[shape][1]]
    assert_refused(["ingest", str(source), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id"],
                   says=says, watched=[tmp_path])
    assert sorted(p.name for p in tmp_path.iterdir()) == [source.name]  # no output, no staging


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet", "csv.gz", "jsonl.gz", "csv.zip", "jsonl.zip"])
def test_every_ingest_format_reads_its_good_file(fmt, tmp_path):
    import pyarrow.parquet as pq

    from tests.support.cli_run import cli

    source = _ingest_input(tmp_path, GOOD, fmt)
    code, out, err = cli("ingest", str(source), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id")
    assert code == 0, err
    assert pq.read_table(tmp_path / "kb")["key"].to_pylist() == ["a", "b", "c"]


def test_keys_that_are_numbers_in_one_file_and_text_in_another_are_refused_naming_both(tmp_path):
    from tests.integration.test_bad_input import assert_refused

    (tmp_path / "a.jsonl").write_text(_jsonl('{"id": 1, "conf": 0.9}', '{"id": 2, "conf": 0.5}'))
    (tmp_path / "b.csv").write_text(_text(["1,0.4", "3,0.2"], ","))
    for memory_limit in ("in memory", "dask"):
        argv = ["ingest", str(tmp_path / "a.jsonl"), str(tmp_path / "b.csv"), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id"]
        if memory_limit == "dask":
            from prdist.dataflow.ranks.ingest import IngestSpec, ingest
            from prdist.errors import DataError

            with pytest.raises(DataError, match="the key: text here but numbers in .*a.jsonl; give every file the same kinds"):
                ingest([tmp_path / "a.jsonl", tmp_path / "b.csv"], str(tmp_path / "kb"), IngestSpec(score="conf", keys=("id",)),
                       memory_limit=0)
        else:
            assert_refused(argv, says=[f"{tmp_path / 'b.csv'}, the key: text here but numbers in {tmp_path / 'a.jsonl'}",
                                       "write the JSON values as strings"], watched=[tmp_path])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.csv"]


def test_a_jsonl_string_holding_a_unicode_line_separator_stays_one_line(tmp_path):
    import pyarrow.parquet as pq

    from tests.support.cli_run import cli

    (tmp_path / "a.jsonl").write_text(_jsonl('{"id": "a\u2028b", "conf": 0.9}', '{"id": "c de", "conf": 0.5}'))
    code, out, err = cli("ingest", str(tmp_path / "a.jsonl"), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id")
    assert code == 0, err
    assert pq.read_table(tmp_path / "kb")["key"].to_pylist() == ["a b", "c de"]


def test_events_name_the_run_the_resource_and_the_task_alike_by_absolute_paths(workspace, tmp_path, monkeypatch):
    import shutil

    from tests.support.cli_run import cli
    from flows.events import announce_run
    from prdist.dataflow.io.artifacts import RunDirectory, committed_outcome
    from tests.support.prefect_events import recorded_events

    shutil.copytree(workspace / "res", tmp_path / "res")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("run", "--resource", "res", "--out", "runs", "--eps", "0.1", "--window", "20")  # relative paths
    assert code == 3, err
    run_id = Path(out.strip().splitlines()[-1]).name
    outcome = committed_outcome(RunDirectory("runs", run_id))
    assert outcome.manifest["input"]["url"] == f"file://{tmp_path / 'res'}" and outcome.url == f"runs/{run_id}"
    with recorded_events(monkeypatch) as sent:
        announce_run(outcome, runs="runs")
        completed, awaiting = sent()
    run = tmp_path / "runs" / run_id
    for event in (completed, awaiting):
        assert (event.payload["run"], event.payload["resource"]) == (str(run), str(tmp_path / "res"))
    assert completed.payload["report"] == str(run / "report.html")
    assert awaiting.payload["task"].startswith(str(run) + "/annotation_task")


def test_a_release_pointer_is_not_written_when_there_is_no_api_to_announce_to(workspace, tmp_path, monkeypatch):
    from tests.integration.test_bad_input import assert_refused

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert_refused(["release", "--resource", str(workspace / "res"), "--current", str(tmp_path / "current.json")],
                   says=["No Prefect API to announce the release to"], watched=[tmp_path])
    assert not (tmp_path / "current.json").exists()  # the old code wrote it, then refused


def test_the_dask_path_casts_numbers_to_the_first_files_type_or_refuses_a_fraction(tmp_path):
    import pyarrow.parquet as pq

    from prdist.dataflow.ranks.ingest import IngestSpec, ingest
    from prdist.errors import DataError

    (tmp_path / "whole.jsonl").write_text(_jsonl('{"id": "a", "conf": 0.9, "x": 1}'))
    (tmp_path / "fraction.jsonl").write_text(_jsonl('{"id": "b", "conf": 0.5, "x": 1.5}'))
    spec = IngestSpec(score="conf", keys=("id",))
    with pytest.raises(DataError, match="fraction.jsonl, field 'x': numbers with a decimal point here but whole numbers in"):
        ingest([tmp_path / "whole.jsonl", tmp_path / "fraction.jsonl"], str(tmp_path / "kb"), spec, memory_limit=0)
    ingest([tmp_path / "fraction.jsonl", tmp_path / "whole.jsonl"], str(tmp_path / "kb"), spec, memory_limit=0)
    assert pq.read_table(tmp_path / "kb")["x"].to_pylist() == [1.0, 1.5]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "jsonl.gz"])
def test_a_byte_order_mark_is_read_as_the_start_of_the_text(fmt, tmp_path):
    import pyarrow.parquet as pq

    from tests.support.cli_run import cli

    base = fmt.partition(".")[0]
    source = _ingest_input(tmp_path, {base: "\ufeff" + GOOD[base]}, fmt)  # as Excel and some editors write UTF-8
    code, out, err = cli("ingest", str(source), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "id")
    assert code == 0, err
    assert pq.read_table(tmp_path / "kb")["key"].to_pylist() == ["a", "b", "c"]


def test_a_flow_runs_name_shows_its_series_literally(monkeypatch, tmp_path):
    from prefect.runtime import flow_run

    from flows.evaluate_release import run_name

    monkeypatch.setitem(flow_run.FIELDS, "parameters", lambda: {"resource": str(tmp_path / "r1"), "series": f"kb{ESCAPES}"})
    name = run_name()  # what Prefect's console log prints when the flow run starts
    assert _unshowable(name) == [] and name == "kb\\x1b]0;owned\\x07\\x1b[2J\\x1b[1A\\u202e\\x9b @ r1"
