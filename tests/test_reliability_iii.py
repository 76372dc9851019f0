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
