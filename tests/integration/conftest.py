"""The integration tier's servers: one Prefect backend and one Label Studio per session.

Commands and flows run in-process, as with nothing configured, unless a test asks for the Prefect
API (``prefect_harness``).
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

from tests.support.paths import LABEL_STUDIO_VENV
from tests.support.seaweed import free_ports, stop, tail
from tests.support.timings import TIMINGS

LABEL_STUDIO = LABEL_STUDIO_VENV / "bin" / "label-studio"
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
    tests/support/label_studio/requirements.lock); without it the tests that need it are skipped.
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
        TIMINGS["Label Studio fixture start-up (s)"] = time.monotonic() - started
        yield server
    finally:
        stop(proc)
        with contextlib.suppress(ProcessLookupError):  # a helper process of the server, if any
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(workdir, ignore_errors=True)


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
