"""One definition of each pipeline, two runners: in-process and as a Prefect flow run.

The same ``prdist run`` through both runners writes the same run directory, byte for byte, with
one exclusion by nature: the wall-clock seconds of the extraction (the manifest's ``timings`` and
the report's "Timings" table) are measured, so they differ between any two runs. Computing on a
Dask cluster and in-process (below the size where a local cluster pays) give the same bytes too.
Commands that need neither Prefect nor Dask do not import them. The exit-order test holds its thread
on an event the exit hooks set, not on a sleep, so the thread is certainly alive when the command ends.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from tests.support.cli_run import cli
from prdist.cli import main
from tests.support.small_release import ranked_scores_and_labels, write_release

HEAVY = ("prefect", "dask", "distributed", "scipy.stats")


@pytest.fixture
def release(tmp_path) -> str:
    n = 30_000
    scores, labels = ranked_scores_and_labels(n, seed=5)
    keys = np.arange(n, dtype=np.int64) * 3 + 1
    return write_release(tmp_path / "release", pa.table({"key": keys, "score": scores, "label": labels}), row_group_size=4_096)


def run_files(run: str) -> dict[str, bytes]:
    """Every file of a run directory, with the measured seconds masked (see the module notes)."""
    files = {}
    for path in sorted(Path(run).rglob("*")):
        data = path.read_bytes()
        if path.name == "manifest.json":
            data = re.sub(rb'"timings": \{[^}]*\}', b'"timings": "masked"', data)
        elif path.name == "report.html":
            data = re.sub(rb"<h3>Timings</h3>.*?</table>", b"<h3>Timings</h3>masked", data, flags=re.S)
        files[str(path.relative_to(run))] = data
    assert len(files) >= 4
    return files


def run(*argv) -> tuple[str, str]:
    code, out, err = cli("run", *argv)
    assert code == 0, err
    return out.strip().splitlines()[-1], err


def _flow_run_names() -> list[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return [f.name for f in client.read_flow_runs()]


def test_both_runners_write_the_same_run_directory(tmp_path, release, prefect_harness):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    args = ["--resource", release, "--oracle-column", "label", "--eps", "0.1", "--window", "20"]
    recorded = _flow_run_names()
    on_prefect, err = run(*args, "--out", str(tmp_path / "prefect"))
    assert "running in-process" not in err
    assert len(_flow_run_names()) == len(recorded) + 1  # the run is a flow run of the API

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        in_process, err = run(*args, "--out", str(tmp_path / "in-process"))
    assert "running in-process" in err
    assert Path(in_process).name == Path(on_prefect).name  # the same run id
    assert run_files(in_process) == run_files(on_prefect)
    manifest = json.loads((Path(in_process) / "manifest.json").read_text())
    assert manifest["counts"]["unknown"] == 0 and manifest["exact"]


def test_a_cluster_and_in_process_computing_write_the_same_run_directory(tmp_path, release, dask_client):
    args = ["--resource", release, "--oracle-column", "label", "--eps", "0.1", "--window", "20", "--bands"]
    # Below LOCAL_CLUSTER_FROM_ITEMS and without --scheduler the passes run in-process.
    alone, _ = run(*args, "--out", str(tmp_path / "alone"))
    clustered, _ = run(*args, "--out", str(tmp_path / "cluster"), "--scheduler", dask_client.scheduler.address)
    assert (Path(alone) / "bands.parquet").exists()
    assert run_files(alone) == run_files(clustered)


def test_one_thread_and_several_write_the_same_run_directory(tmp_path, monkeypatch):
    from prdist.dataflow.engine import executor
    from tests.dataflow.test_select import shuffled, write_files

    # Unsorted, tied scores, five files: five partitions per pass, a selection of several passes
    # and the key-hash pass of the exact precision, each pass's tasks finishing in any order.
    keys, scores, labels = shuffled(40_000, 11, decimals=2)
    release = write_files(tmp_path / "release", {"key": keys, "score": scores, "label": labels}, files=5, row_group_size=2_000)
    args = ["--resource", release, "--oracle-column", "label", "--eps", "0.1", "--window", "20", "--bands"]
    runs = {}
    for threads in (1, 3):
        monkeypatch.setattr(executor, "THREADS", threads)
        runs[threads], _ = run(*args, "--out", str(tmp_path / f"threads-{threads}"))
    assert (Path(runs[1]) / "exact.parquet").exists()
    assert run_files(runs[1]) == run_files(runs[3])


def _modules_after(argv: list[str], cwd: Path, heavy=HEAVY) -> dict:
    """Run ``prdist argv`` in a fresh interpreter; which heavy modules it imported, and its exit code."""
    code = (
        "import json, sys\nfrom prdist.cli import main\n"
        f"try:\n    status = main({argv!r})\nexcept SystemExit as exc:\n    status = exc.code\n"
        f"print(json.dumps({{'status': status, 'loaded': sorted(m for m in {tuple(heavy)!r} if m in sys.modules)}}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PATH": "/usr/bin:/bin", "HOME": str(cwd)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_quick_commands_import_neither_prefect_nor_dask_nor_scipy_stats(tmp_path, release):
    labels = tmp_path / "labels.csv"
    labels.write_text("key,label\n1,1\n4,0\n")
    store = str(tmp_path / "store")
    commands = [
        ["--help"],
        ["budget", "--n", "1000000"],
        ["labels", "import", "--store", store, str(labels)],
    ]
    for argv in commands:
        assert _modules_after(argv, tmp_path) == {"status": 0, "loaded": []}, argv
    # The parser alone answers --help: not even pandas or pyarrow.
    assert _modules_after(["--help"], tmp_path, heavy=(*HEAVY, "pandas", "pyarrow")) == {"status": 0, "loaded": []}

    # A rerun of a committed run: found from the footers, the staged items and the labels alone.
    args = ["run", "--resource", release, "--labels", store, "--eps", "0.1", "--window", "20", "--out", str(tmp_path / "runs")]
    code, out, err = cli(*args)
    assert code == 3, err
    task = out.strip().splitlines()[-1]
    assert _modules_after(["labels", "export", "--run", task, "--out", str(tmp_path / "task.csv")], tmp_path) == {"status": 0, "loaded": []}
    assert _modules_after(args, tmp_path) == {"status": 3, "loaded": []}

    # A fresh run in-process (no Prefect API, no scheduler): Prefect, Dask and distributed are
    # not imported at all (the flow's body runs as a plain function, the passes on threads).
    fresh = ["run", "--resource", release, "--oracle-column", "label", "--eps", "0.1", "--window", "20",
             "--out", str(tmp_path / "fresh")]
    assert _modules_after(fresh, tmp_path, heavy=("prefect", "dask", "distributed")) == {"status": 0, "loaded": []}
    # A settings file that names no API is no reason to import Prefect either.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / ".env").write_text("AWS_REGION=eu-west-1\n")
    assert _modules_after(fresh, tmp_path, heavy=("prefect",)) == {"status": 0, "loaded": []}
    (tmp_path / "pyproject.toml").write_text("[tool.prefect.api]\nurl = 'http://127.0.0.1:9/api'\n")
    assert _modules_after(["run", "--resource", release, "--out", str(tmp_path / "other")], tmp_path,
                          heavy=("prefect",))["loaded"] == ["prefect"]


def test_every_public_name_is_importable_from_prdist():
    import prdist

    assert set(prdist.__all__) <= set(dir(prdist))
    for name in prdist.__all__:
        assert getattr(prdist, name) is not None, name
    with pytest.raises(AttributeError):
        prdist.no_such_name  # noqa: B018


def test_an_unreachable_api_is_one_line_naming_the_variable(tmp_path, release):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "prdist", "run", "--resource", release, "--oracle-column", "label",
                           "--out", str(tmp_path / "runs")], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("prdist: error: The Prefect API at") and "PREFECT_API_URL" in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*/manifest.json"))


def test_a_step_outside_a_flow_run_is_its_function_under_the_same_retry_policy():
    from flows._policies import IN_MEMORY, step
    from prdist.dataflow.io.storage_errors import StorageUnavailable
    from prdist.errors import DataError

    calls = []

    @step(retries=2, retry_delay_seconds=[0, 0], **IN_MEMORY)
    def flaky(failures: list):
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return len(calls)

    assert flaky([OSError("connection reset"), StorageUnavailable("endpoint down")]) == 3  # two retries
    calls.clear()
    with pytest.raises(DataError):  # bad input is never retried
        flaky([DataError("bad score")])
    assert len(calls) == 1
    calls.clear()
    with pytest.raises(OSError):  # retries run out
        flaky([OSError("a"), OSError("b"), OSError("c")])
    assert len(calls) == 3
    assert type(flaky.with_options(retries=0)) is type(flaky)  # tests turn retries off and keep a step


def test_a_temporary_server_that_does_not_come_up_in_time_is_one_line_naming_the_timeout(tmp_path, release):
    env = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "prdist", "run", "--prefect", "--resource", release, "--oracle-column", "label",
                           "--out", str(tmp_path / "runs")], capture_output=True, text=True, env=env, timeout=180, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("prdist")]
    assert len(ours) == 1 and "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in ours[0], done.stderr
    assert "Traceback" not in done.stderr


def _console(tmp_path, *argv: str, before: str = "") -> subprocess.CompletedProcess:
    """``prdist ARGV`` through the console entry point, after ``before`` (Python) in the same process."""
    code = f"import sys\n{before}\nfrom prdist.cli import console_main\nsys.argv = ['prdist', *{list(argv)!r}]\nconsole_main()\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)


def test_the_command_exits_with_its_code_after_its_output_and_atexit_handlers(tmp_path, capsys):
    # console_main leaves by os._exit (pyarrow's thread pools can abort interpreter finalisation):
    # nothing that finalisation would have done for the command may be lost.
    # What the interpreter would do, in its order: threading's exit hooks (Prefect drains its
    # events worker there), then joining non-daemon threads, then the atexit handlers.
    order = tmp_path / "order"
    before = (
        "import atexit, pathlib, threading\n"
        f"log = pathlib.Path({str(order)!r})\n"
        "def note(what):\n    with log.open('a') as fh: fh.write(what + ' ')\n"
        # The thread is still running when the command ends: it waits for the exit hooks to start.
        "exiting = threading.Event()\n"
        "threading.Thread(target=lambda: (exiting.wait(60), note('thread')), daemon=False).start()\n"
        "threading._register_atexit(lambda: (note('threading-hook'), exiting.set()))\n"
        "atexit.register(lambda: note('atexit'))"
    )
    done = _console(tmp_path, "budget", "--n", "1000000000", before=before)
    assert main(["budget", "--n", "1000000000"]) == 0
    assert done.returncode == 0 and done.stdout == capsys.readouterr().out  # every line, flushed
    assert order.read_text().split() == ["threading-hook", "thread", "atexit"]
    bad = _console(tmp_path, "budget", "--n", "0")
    assert bad.returncode == 2 and bad.stderr.startswith("prdist: error: The '--n' parameter") and bad.stdout == ""


def test_a_reader_that_goes_away_is_not_a_failure_of_the_command(tmp_path):
    code = "import sys\nfrom prdist.cli import console_main\nsys.argv = ['prdist', 'budget', '--n', '1000000000']\nconsole_main()\n"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, cwd=tmp_path)
    process.stdout.close()  # gone before the command writes a line (`prdist budget | head -0`)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and b"Traceback" not in err and b"Exception" not in err, err


#: The page faults of a second computation of the confidence bounds of a 10^7-item plan (its
#: temporaries: arrays of 1-30 MiB allocated and freed), as the ``prdist`` command's work
#: (``console_main`` around it) or as a plain process's.
_FAULTS_OF_FREED_BLOCKS = """
import resource, sys
import numpy as np
import prdist.cli
from prdist import plan_paula
from prdist.paula.bounds import paula_bounds

def work():
    plan = plan_paula(10_000_000)
    labels = np.full(plan.size, np.nan)
    paula_bounds(plan, labels, confidence=0.95)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    paula_bounds(plan, labels, confidence=0.95)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return 0

if sys.argv[1] == "command":
    prdist.cli.main = work
    prdist.cli.console_main()
else:
    work()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_the_command_keeps_the_blocks_it_frees_instead_of_faulting_them_in_again():
    # With glibc's defaults, freed blocks of 128 KiB and up go back to the kernel and fault in
    # again, page by page, when next allocated (14,075 faults here; 68 in the command).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    faults = {how: int(subprocess.run([sys.executable, "-c", _FAULTS_OF_FREED_BLOCKS, how], capture_output=True, env=env,
                                      text=True, check=True, timeout=60).stdout) for how in ("plain", "command")}
    if faults["plain"] < 5000:
        pytest.skip(f"this host's glibc faults {faults['plain']} pages in a plain process (huge pages?): nothing to keep")
    assert faults["command"] < faults["plain"] / 10
