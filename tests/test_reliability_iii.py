"""Classes of defects of the third adversarial pass (issue 31), each tested as a class.

- **Pipes and closed outputs**: every command keeps its exit code and its stderr lines when the
  reader of its output goes away (``| head``) or its output is closed (``>&-``).
- **Outputs never land on inputs or committed runs**: every option that writes is refused (exit 2,
  nothing written) on the resource, the label store and every committed run directory.
- **Terminal and XML sanitising**: every string from outside that reaches a terminal goes through
  one sanitiser; the Label Studio config is well-formed XML whatever the item text holds.
- **Resource guards before allocating**: plan size, huge numbers, decompressed size.
"""

from __future__ import annotations

import os
import time
import subprocess
import sys
from pathlib import Path

import pytest

from small_release import ranked_scores_and_labels

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

    from small_release import write_release

    scores, labels = ranked_scores_and_labels(4000, seed=3)
    keys = [f"k{i}" for i in range(scores.size)]
    write_release(root / "res", pa.table({"key": keys, "score": scores, "label": labels}), row_group_size=1024)
    (root / "answers.csv").write_text("key,label\n" + "".join(f"k{i},{i % 2}\n" for i in range(50)))
    (root / "items.csv").write_text("id,conf\n" + "".join(f"i{i},{1 - i / 100}\n" for i in range(100)))
    done = _shell("prdist run --resource res --labels store0 --out runs --eps 0.1 --window 20", root)
    assert done.returncode == 3, done.stderr
    assert _shell("prdist labels import --store store0 answers.csv", root).returncode == 0


#: Every command, as a template ({m}: a name per try, for create-only outputs) and its exit code.
COMMANDS = {
    "budget": ("prdist budget --n 1000000", 0),
    "budget --json": ("prdist budget --n 1000000 --json", 0),
    "synth": ("prdist synth --n 1000 --seed 1 --out synth-{m}", 0),
    "run (awaiting labels)": ("prdist run --resource res --labels store0 --out runs --eps 0.1 --window 20", 3),
    "labels import": ("prdist labels import --store store-{m} answers.csv", 0),
    "labels export": ("prdist labels export --run runs/$(ls runs | head -1) --out task-{m}.csv", 0),
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
    from test_reliability import _commands

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
    from test_bad_input import assert_refused

    argv = INT_BASE[command].format(root=workspace).split() + [option, str(10**23)]
    assert_refused(argv, says=[option, "larger than prdist can count", "smaller number"], watched=[workspace])


def test_ranks_beyond_int64_are_refused_in_one_line(workspace):
    from test_bad_input import assert_refused

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
    # (or spent minutes in exact powers); the refusal comes from the parameters alone, at once.
    code = f"import sys\nfrom prdist.cli import console_main\nsys.argv = ['prdist', *{argv!r}]\nconsole_main()\n"
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", f"ulimit -v 2000000; exec {sys.executable} -c \"$0\"", code],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert time.monotonic() - started < 20
    line, = done.stderr.strip().splitlines()
    assert line.startswith("prdist: error: The PAULA plan of n=") and all(s in line for s in says), line


@pytest.mark.parametrize("command, option", INT_OPTIONS)
def test_the_largest_count_is_run_or_refused_by_every_option_never_a_crash(command, option, workspace):
    from cli_run import cli

    argv = INT_BASE[command].format(root=workspace).split() + [option, str(2**63 - 1)]
    argv = [word.replace("-big", f"-max{option}") for word in argv]
    code, out, err = cli(*argv)
    assert code in (0, 2, 3) and "Traceback" not in err and "failed:" not in err, err
