"""Create an S3 bucket once the object store answers: the init job of deploy/compose.yaml.

    python deploy/create_bucket.py BUCKET [--timeout SECONDS]

The endpoint and credentials come from the standard AWS variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). An existing bucket is left as it is, so the job can run
on every `docker compose up`. Connection failures are retried until the timeout (the store may
still be starting); refused credentials fail at once. Exit 0 when the bucket exists, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time

RETRY_SECONDS = 2.0


def create_bucket(bucket: str, *, timeout: float, sleep=time.sleep, clock=time.monotonic) -> None:
    """Create ``bucket`` unless it exists, retrying connection failures for ``timeout`` seconds.

    ``sleep`` waits between attempts and ``clock`` reads the time the deadline is measured on
    (``time.sleep`` and ``time.monotonic``; tests pass their own to observe the waits).
    """
    import s3fs

    deadline = clock() + timeout
    while True:
        # One quick attempt per loop: the loop is the retry, bounded by the deadline.
        fs = s3fs.S3FileSystem(
            skip_instance_cache=True,
            config_kwargs={"connect_timeout": 5, "read_timeout": 30, "retries": {"max_attempts": 1}},
        )  # fmt: skip
        fs.retries = 1  # s3fs's own retry loop (a class attribute, 5 by default)
        try:
            if not fs.exists(bucket):
                fs.mkdir(bucket)
            return
        except PermissionError:
            raise
        except Exception as exc:  # the store is not up yet: botocore/aiohttp connection errors
            if clock() + RETRY_SECONDS > deadline:
                raise TimeoutError(f"the object store did not answer within {timeout:g} s (last error: {exc})") from None
            sleep(RETRY_SECONDS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bucket", help="bucket name, e.g. prdist")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the store (default 120)")
    args = parser.parse_args(argv)
    try:
        create_bucket(args.bucket, timeout=args.timeout)
    except (PermissionError, TimeoutError) as exc:
        print(f"create_bucket: cannot create s3://{args.bucket}: {exc}", file=sys.stderr)
        return 1
    print(f"create_bucket: s3://{args.bucket} is ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
