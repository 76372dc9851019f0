"""Storage: URLs, redaction, create-only writes and error translation, on disk and on real S3."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs

from prdist.dataflow.io import storage
from prdist.dataflow.io.publishing import write_bytes_exclusive, write_parquet
from prdist.dataflow.io.storage import join_url, parse_storage_options, redact, redact_url, resolve
from prdist.dataflow.io.storage_errors import AlreadyExists, storage_errors
from prdist.errors import InputError, ParameterError


def _race(write, contenders=8):
    """Start ``contenders`` writers at once; return how many succeeded and how many were refused."""
    barrier = threading.Barrier(contenders)
    outcomes = []

    def run(i):
        barrier.wait()
        try:
            write(i)
            outcomes.append("won")
        except AlreadyExists:
            outcomes.append("refused")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes.count("won"), outcomes.count("refused")


# ------------------------------------------------------------------------------------------
# Options, URLs, redaction


def test_redact_hides_every_secret_and_keeps_the_rest():
    options = {
        "key": "AKIAEXAMPLE",
        "secret": "wJalrXUtnFEMI",
        "token": "session-token",
        "anon": False,
        "profile": None,
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "aws_secret_access_key": "x", "region_name": "eu"},
        "config_kwargs": {"retries": {"max_attempts": 2}},
    }
    out = redact(options)
    text = repr(out)
    for secret in ("AKIAEXAMPLE", "wJalrXUtnFEMI", "session-token", "'x'"):
        assert secret not in text
    assert out["client_kwargs"]["endpoint_url"] == "http://127.0.0.1:9000"
    assert out["client_kwargs"]["region_name"] == "eu"
    assert out["config_kwargs"] == {"retries": {"max_attempts": 2}}
    assert out["anon"] is False and out["profile"] is None
    assert options["key"] == "AKIAEXAMPLE", "the caller's dict is not modified"
    assert redact(None) == {}


def test_redact_url_strips_userinfo_and_signed_query_values():
    url = "https://user:hunter2@host.example/a/b.parquet?X-Amz-Credential=AK&X-Amz-Signature=abc&part=3"
    out = redact_url(url)
    assert "hunter2" not in out and "user" not in out and "abc" not in out and "=AK" not in out
    assert out.startswith("https://***@host.example/a/b.parquet?") and "part=3" in out
    assert redact_url("relative/path") == "relative/path"


def test_storage_options_from_json_text_and_bad_values():
    assert parse_storage_options('{"endpoint_url": "http://x", "anon": true}') == {"endpoint_url": "http://x", "anon": True}
    assert parse_storage_options({"a": 1}) == {"a": 1}
    with pytest.raises(ParameterError, match="not valid JSON"):
        parse_storage_options("{anon: true}")
    with pytest.raises(ParameterError, match="must be a JSON object. Got a JSON list"):
        parse_storage_options("[1, 2]")
    with pytest.raises(ParameterError, match="must be a dict, JSON text or None"):
        parse_storage_options(3)


def test_resolve_plain_paths_file_urls_and_other_protocols(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plain = resolve("data/res")
    assert plain.is_local and plain.protocol == "file"
    assert plain.path == str(tmp_path / "data" / "res")
    assert plain.url == f"file://{tmp_path}/data/res"
    assert resolve(f"file://{tmp_path}/x").path == str(tmp_path / "x")
    assert resolve(tmp_path / "y").path == str(tmp_path / "y"), "os.PathLike is accepted"
    memory = resolve("memory://bucket/x")
    assert memory.protocol == "memory" and not memory.is_local
    child = plain.child("part-0.parquet")
    assert child.path == str(tmp_path / "data" / "res" / "part-0.parquet") and child.fs is plain.fs


def test_resolve_rejects_unknown_protocols_and_empty_urls():
    with pytest.raises(InputError, match="nosuchproto"):
        resolve("nosuchproto://x/y")
    for bad in ("", "   ", None, 3):
        with pytest.raises(ParameterError, match="non-empty path or URL"):
            resolve(bad)


def test_s3_locations_never_show_credentials():
    loc = resolve("s3://bucket/prefix", storage_options={"key": "AKIDX", "secret": "TOPSECRET", "endpoint_url": "http://127.0.0.1:1"})
    assert loc.url == "s3://bucket/prefix" and loc.path == "bucket/prefix"
    assert "TOPSECRET" not in repr(loc) and "AKIDX" not in repr(loc)


def test_join_url_keeps_protocols_and_paths():
    assert join_url("s3://b/p", "x", "y.json") == "s3://b/p/x/y.json"
    assert join_url("s3://b/p/", "/x") == "s3://b/p/x"
    assert join_url("/tmp/a", "b") == "/tmp/a/b"


# ------------------------------------------------------------------------------------------
# Local create-only writes


def test_exclusive_bytes_are_written_once_and_never_overwritten(tmp_path):
    target = tmp_path / "sub" / "marker.json"
    write_bytes_exclusive(str(target), b"first")
    with pytest.raises(AlreadyExists, match="exists already") as info:
        write_bytes_exclusive(str(target), b"second")
    assert isinstance(info.value, InputError) and isinstance(info.value, FileExistsError)
    assert target.read_bytes() == b"first"
    assert sorted(os.listdir(target.parent)) == ["marker.json"], "no temporary file is left behind"


def test_exactly_one_of_racing_local_writers_wins(tmp_path):
    target = str(tmp_path / "contended")
    won, refused = _race(lambda i: write_bytes_exclusive(target, str(i).encode() * 1000))
    assert (won, refused) == (1, 7)
    content = open(target, "rb").read()
    assert len(content) == 1000 and len(set(content)) == 1, "one writer's bytes, whole"
    assert os.listdir(tmp_path) == ["contended"]


def test_write_parquet_publishes_whole_files_only(tmp_path, monkeypatch):
    table = pa.table({"rank": [1, 2, 3], "score": [0.9, 0.5, 0.1]})
    target = tmp_path / "plan.parquet"
    write_parquet(table, str(target), row_group_size=2)
    assert pq.read_table(target).equals(table)
    assert pq.ParquetFile(target).metadata.row_group(0).column(1).statistics.has_min_max
    with pytest.raises(AlreadyExists):
        write_parquet(table, str(target))
    write_parquet(table.slice(0, 1), str(target), exclusive=False)
    assert pq.read_table(target).num_rows == 1

    def broken(tbl, where, **kwargs):
        where.write(b"PAR1 half a file")
        raise RuntimeError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        write_parquet(table, str(tmp_path / "broken.parquet"))
    assert sorted(os.listdir(tmp_path)) == ["plan.parquet"], "nothing half-written is visible"


def test_write_parquet_checks_its_arguments(tmp_path):
    with pytest.raises(ParameterError, match="pyarrow.Table"):
        write_parquet({"a": [1]}, str(tmp_path / "x.parquet"))
    with pytest.raises(ParameterError, match="statistics"):
        write_parquet(pa.table({"a": [1]}), str(tmp_path / "x.parquet"), write_statistics=False)


def test_other_fsspec_filesystems_get_create_only_writes():
    url = "memory://prdist-test-storage/marker"
    write_bytes_exclusive(url, b"one")
    with pytest.raises(AlreadyExists):
        write_bytes_exclusive(url, b"two")
    fs, path = storage.filesystem(url)
    assert fs.cat(path) == b"one"
    assert fs.ls(os.path.dirname(path), detail=False) == ["/prdist-test-storage/marker"]
    fs.rm(path)


def test_local_errors_name_the_problem(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        with storage_errors(str(tmp_path / "missing"), action="read"):
            open(tmp_path / "missing", "rb")
    blocked = tmp_path / "blocked"
    blocked.write_bytes(b"")
    with pytest.raises(InputError, match="is a file, not a directory"):
        write_bytes_exclusive(str(blocked / "x"), b"data")


# ------------------------------------------------------------------------------------------
# Real S3 (SeaweedFS)


def test_s3_exclusive_writes_use_conditional_puts(s3_server, s3_url):
    options = s3_server.storage_options
    target = f"{s3_url}/marker.json"
    write_bytes_exclusive(target, b"first", storage_options=options)
    with pytest.raises(AlreadyExists):
        write_bytes_exclusive(target, b"second", storage_options=options)
    fs = s3fs.S3FileSystem(**options)
    assert fs.cat(target) == b"first"


def test_exactly_one_of_racing_s3_writers_wins(s3_server, s3_url):
    target = f"{s3_url}/contended"
    won, refused = _race(lambda i: write_bytes_exclusive(target, str(i).encode() * 1000, storage_options=s3_server.storage_options))
    assert (won, refused) == (1, 7)
    assert len(set(s3fs.S3FileSystem(**s3_server.storage_options).cat(target))) == 1


def test_s3_parquet_writes_are_create_only_and_all_or_nothing(s3_server, s3_url, monkeypatch):
    options = s3_server.storage_options
    table = pa.table({"key": list(range(1000)), "score": [i / 1000 for i in range(1000)]})
    target = f"{s3_url}/plan.parquet"
    write_parquet(table, target, storage_options=options)
    fs = s3fs.S3FileSystem(**options)
    with fs.open(target, "rb") as fh:
        assert pq.read_table(fh).equals(table)
    # A multipart upload completed with If-None-Match: refused, the original object untouched.
    with pytest.raises(AlreadyExists):
        write_parquet(table.slice(0, 10), target, storage_options=options)
    with fs.open(target, "rb") as fh:
        assert pq.read_table(fh).num_rows == 1000

    def broken(tbl, where, **kwargs):
        where.write(b"PAR1" + b"x" * 100)
        raise RuntimeError("interrupted")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(RuntimeError, match="interrupted"):
        write_parquet(table, f"{s3_url}/broken.parquet", storage_options=options)
    fs.invalidate_cache()
    assert fs.ls(s3_url, detail=False) == [f"{s3_url.removeprefix('s3://')}/plan.parquet"]


def test_standard_aws_variables_are_enough(s3_env, s3_url):
    target = f"{s3_url}/from-env"
    write_bytes_exclusive(target, b"env")
    fs, path = storage.filesystem(target)
    assert fs.cat(path) == b"env"


def _message(excinfo) -> str:
    return str(excinfo.value)


def test_s3_errors_name_the_problem_and_the_fix_without_secrets(s3_server, s3_url):
    good = s3_server.storage_options
    wrong = {**good, "secret": "not-the-secret"}
    readonly = s3_server.readonly_storage_options

    with pytest.raises(InputError, match="bucket 'no-such-bucket-prdist' does not exist") as info:
        write_bytes_exclusive("s3://no-such-bucket-prdist/x", b"x", storage_options=good)
    assert "Create the bucket" in _message(info)

    with pytest.raises(InputError, match="rejected the credentials") as info:
        write_bytes_exclusive(f"{s3_url}/x", b"x", storage_options=wrong)
    assert "not-the-secret" not in _message(info) and s3_server.secret not in _message(info)

    with pytest.raises(InputError, match="permission denied") as info:
        write_bytes_exclusive(f"{s3_url}/x", b"x", storage_options=readonly)
    assert s3_server.readonly_secret not in _message(info)

    with pytest.raises(InputError, match="no such file or directory"):
        with storage_errors(f"{s3_url}/missing", action="read"):
            s3fs.S3FileSystem(**good).cat(f"{s3_url}/missing")


def test_missing_credentials_and_unreachable_endpoints_are_input_errors(s3_server, s3_url, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    with pytest.raises(InputError, match="no usable credentials were found where it was read.*every Dask worker"):
        write_bytes_exclusive(f"{s3_url}/x", b"x", storage_options={"endpoint_url": s3_server.endpoint_url})

    closed = {**s3_server.storage_options, "endpoint_url": "http://127.0.0.1:9", "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2}}
    with pytest.raises(InputError, match="endpoint cannot be reached") as info:
        write_bytes_exclusive(f"{s3_url}/x", b"x", storage_options=closed)
    assert s3_server.secret not in _message(info)
