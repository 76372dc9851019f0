"""Redaction: what may be logged, stored or shown of storage options and URLs.

One list of secret words serves every place a credential could leak: the storage layer's logs and
errors (:mod:`prdist.dataflow.storage`), the manifest and the report (:mod:`prdist.report`) and
the release event (:mod:`flows.release`). Standard library only, so any layer may import it.

- :func:`redact` masks secret-named values of storage options (recursively).
- :func:`redact_url` masks a URL's user info and its secret-named query values, keeping the URL
  usable as a name in messages and manifests.
- :func:`display_url` is stricter, for text a person reads: it drops user info, query and
  fragment altogether.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "SECRET_WORDS", "display_url", "is_secret_name", "redact", "redact_url"]

#: Option names that hold a secret contain one of these words (case-insensitive). ``key`` covers
#: s3fs's access key id (``key``), ``aws_access_key_id``, ``sse_kms_key_id``, ``account_key``,
#: ``api_key``...; ``sig`` covers signed-URL parameters (``X-Amz-Signature``, Azure's ``sig``).
SECRET_WORDS = ("key", "secret", "password", "passwd", "token", "credential", "signature", "sig", "auth", "session")

#: What a secret value is replaced with.
REDACTED = "***"


def is_secret_name(name) -> bool:
    """Whether an option, query parameter or manifest entry named ``name`` may hold a secret.

    >>> is_secret_name("aws_secret_access_key"), is_secret_name("endpoint_url")
    (True, False)
    """
    lowered = str(name).lower()
    return any(word in lowered for word in SECRET_WORDS)


def redact(storage_options) -> dict:
    """Return a copy of ``storage_options`` that is safe to log: secret values become ``"***"``.

    An option is secret when its name contains one of :data:`SECRET_WORDS`. Nested dicts
    (``client_kwargs``, ``config_kwargs``) are redacted recursively; other values are kept.

    Parameters
    ----------
    storage_options : dict or None

    Returns
    -------
    dict

    Examples
    --------
    >>> redact({"key": "AKIA...", "secret": "s3cr3t", "client_kwargs": {"endpoint_url": "http://x"}})
    {'key': '***', 'secret': '***', 'client_kwargs': {'endpoint_url': 'http://x'}}
    """
    if storage_options is None:
        return {}
    out = {}
    for name, value in dict(storage_options).items():
        if isinstance(value, Mapping):
            out[name] = redact(value)
        elif value is not None and is_secret_name(name):
            out[name] = REDACTED
        else:
            out[name] = value
    return out


def redact_url(url) -> str:
    """Return ``url`` without the credentials it may embed (``user:password@``, signed queries).

    Examples
    --------
    >>> redact_url("https://alice:pw@example.org/data?X-Amz-Signature=abc&part=1")
    'https://***@example.org/data?X-Amz-Signature=%2A%2A%2A&part=1'
    >>> redact_url("s3://bucket/resource")
    's3://bucket/resource'
    """
    text = os.fspath(url) if isinstance(url, os.PathLike) else str(url)
    if "://" not in text:
        return text
    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if is_secret_name(k) else v) for k, v in pairs])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def display_url(text: str) -> str:
    """Drop user info, query and fragment of a URL: they are where credentials and signatures go.

    Examples
    --------
    >>> display_url("https://alice:pw@example.org/data?part=1")
    'https://example.org/data (query not shown)'
    >>> display_url("runs/2026-08")
    'runs/2026-08'
    """
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return "(unparseable URL not shown)"
    netloc = parts.netloc.rpartition("@")[2]
    redacted = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return redacted + (" (query not shown)" if parts.query else "")
