"""The README's walkthrough, run exactly as printed, so that it cannot drift from the code.

Every ```bash block of the sections in :data:`RUN_SECTIONS` is run verbatim, in order, by bash in a
fresh directory laid out like a clone (``.venv`` and ``../shared/data`` reachable, nothing else):
each command (continuation lines joined) must exit with the code its following comment lines state
("exit 3"), 0 when they state none. The figures the prose quotes are checked against the runs the
commands made, and every file the walkthrough leaves is covered by ``.gitignore``. Every other
```bash block of the README is listed in :data:`NOT_RUN`, so a new one must be run here or named.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.support.paths import ROOT  # noqa: E402
DATA = ROOT.parent / "shared" / "data"
RUN_SECTIONS = ("Five minutes with your own data", "Annotating")
#: The shell blocks not run here, by their first line: make demo and make test (the suite itself).
NOT_RUN = (
    "make demo   # sets up .venv, then runs the main job on embedded defaults",
    # the judge-and-gold cycle on a user's own kb/ (the same cycle runs on synthetic data in tests/integration/test_judge.py)
    "prdist labels import --store store/ --role judge judge.csv   # automatic verdicts (a model, an LLM judge)",
)

pytestmark = pytest.mark.skipif(not (DATA / "reverb-emnlp2011").is_dir(), reason="needs ../shared/data (ReVerb)")


def shell_blocks(text: str) -> list[tuple[str, str]]:
    """(section heading, block text) of every ```bash block of a Markdown text."""
    blocks, section, inside = [], "", None
    for line in text.splitlines():
        if inside is not None:
            if line.startswith("```"):
                blocks.append((section, "\n".join(inside)))
                inside = None
            else:
                inside.append(line)
        elif line.startswith("```bash"):
            inside = []
        elif line.startswith("## "):
            section = line[3:].strip()
    return blocks


def commands(block: str) -> list[tuple[str, int]]:
    """The commands of a block (continuation lines joined) with the exit code stated after each."""
    found, pending = [], None
    for line in block.splitlines():
        if pending is not None:
            pending.append(line)
            if not line.endswith("\\"):
                found.append(["\n".join(pending), 0])
                pending = None
        elif line.lstrip().startswith("#") or not line.strip():
            stated = re.search(r"\bexit (\d+)\b", line)
            if stated and found and found[-1][1] == 0:
                found[-1][1] = int(stated.group(1))
        elif line.endswith("\\"):
            pending = [line]
        else:
            found.append([line, 0])
    assert pending is None, f"a command ends in a continuation: {pending}"
    return [(text, code) for text, code in found]


def test_commands_and_stated_exit_codes_are_read_as_written():
    block = "P=x\n$P run a \\\n    --b c\n#   exit 3: waiting\n# 4. next\n$P y   # a comment\n"
    assert commands(block) == [("P=x", 0), ("$P run a \\\n    --b c", 3), ("$P y   # a comment", 0)]
    readme = "## A\n```bash\nls\n```\n## B\n```python\nx\n```\n```bash\npwd\n```\n"
    assert shell_blocks(readme) == [("A", "ls"), ("B", "pwd")]


def _run_block(block: str, cwd: Path, env: dict) -> list[tuple[str, int, int, str]]:
    """Run ``block`` verbatim in bash, recording each command's exit code after it."""
    steps = commands(block)
    codes = cwd / ".exit-codes"
    script = "\n".join(f"{text}\necho $? >> {codes}" for text, _ in steps)
    codes.unlink(missing_ok=True)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    got = [int(c) for c in codes.read_text().split()]
    codes.unlink()
    output = f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    return [(text, want, code, output) for (text, want), code in zip(steps, got, strict=True)]


def _newest_manifest(runs: Path) -> dict:
    newest = max(runs.glob("*/manifest.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(newest.read_text())


# 17 commands: 11 s at load 1.9, 25-30 s at load 3.5-5.4, about 40 s at load 8 (not marked slow: it
# runs in every `make test`, so the README cannot drift unnoticed)
def test_the_readme_walkthrough_runs_as_printed(tmp_path):
    readme = (ROOT / "README.md").read_text()
    blocks = shell_blocks(readme)
    run = [(section, block) for section, block in blocks if section in RUN_SECTIONS]
    assert [section for section, _ in run] == list(RUN_SECTIONS)
    assert sorted(block.splitlines()[0] for section, block in blocks if section not in RUN_SECTIONS) == sorted(NOT_RUN)
    for _, block in run:
        assert not re.search(r"<[^>]*>", "\n".join(text for text, _ in commands(block))), "a placeholder in a command"
    clone = tmp_path / "prdist"
    clone.mkdir()
    (clone / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(DATA)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k != "DASK_SCHEDULER_ADDRESS"}
    started = time.perf_counter()
    for _, block in run:
        for text, want, code, output in _run_block(block, clone, env):
            assert code == want, f"{text!r} exited {code}, the README says {want}\n{output}"
    print(f"README walkthrough: {time.perf_counter() - started:.1f} s, load average {os.getloadavg()}")

    # The figures the prose quotes are the ones the commands computed.
    main = _newest_manifest(clone / "runs")
    c = main["counts"]
    assert main["status"] == "complete"
    assert f"takes {c['labeled']} of the {c['annotations']} planned items" in readme
    assert f"the {c['cannot_judge']} that no ReVerb annotator judged" in readme
    assert f"{c['annotations'] / main['n']:.2%}".replace("%", " %") in readme
    bounds = pd.read_parquet(clone / "runs" / main["run_id"] / "bounds.parquet").set_index("rank")
    last = bounds.loc[main["n"]]
    assert f"p({main['n']}) in [{last['precision_lower']:.3f}, {last['precision_upper']:.3f}]" in readme
    bands = _newest_manifest(clone / "bands-runs")
    b = bands["counts"]
    assert f"exit 0: {b['labeled']} labeled, {b['cannot_judge']} cannot judge, {b['awaiting']} awaiting" in readme
    assert (clone / "bands-runs" / bands["run_id"] / "bands.parquet").is_file()
    # What the annotators get: each item's columns and its sentence, no rank or score; ids stay text.
    task = pd.read_csv(clone / "task.csv", dtype=str, keep_default_na=False)
    assert list(task.columns) == ["key", "sentence", "arg1", "relation", "arg2", "sentence_text", "label"]
    assert (task["label"] == "").all() and task["sentence_text"].str.len().min() > 0
    tasks = json.loads((clone / "task.json").read_text())
    assert all(isinstance(t["data"]["sentence"], str) and t["data"]["sentence_text"] for t in tasks)

    # Nothing the walkthrough leaves shows up as untracked in a clone.
    left = sorted(p.name + ("/" if p.is_dir() else "") for p in clone.iterdir() if p.name != ".venv")
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *left], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert sorted(ignored) == left, f"not in .gitignore: {sorted(set(left) - set(ignored))}"
