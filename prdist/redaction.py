"""Redaction: what may be logged, stored or shown of storage options and URLs.

One list of secret words serves every place a credential could leak: the storage layer's logs and
errors (:mod:`prdist.dataflow.io.storage`), the manifest and the report (:mod:`prdist.render`) and
the release event (:mod:`flows.release`). Standard library only, so any layer may import it.

- :func:`redact` masks secret-named values of storage options (recursively).
- :func:`redact_url` masks a URL's user info and its secret-named query values, keeping the URL
  usable as a name in messages and manifests.
- :func:`display_url` is stricter, for text a person reads: it drops user info, query and
  fragment altogether.
- :func:`terminal_text` is the one sanitiser of text from outside (annotator names, keys, series,
  values quoted in messages) on its way to a terminal, as HTML escaping is for the report.
- :func:`refuse_credentials` is the rule every URL obeys on the way in: a URL that embeds
  credentials (user info, a secret-named query value such as a signature) is refused, named in
  its redacted form. Credentials belong in storage options, which stay sealed; a URL is recorded
  everywhere (Prefect's flow-run parameters, logs, manifests).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from prdist.errors import InputError

__all__ = ["REDACTED", "SECRET_WORDS", "display_url", "embedded_credentials", "is_secret_name", "redact",
           "redact_url", "refuse_credentials", "terminal_text"]

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
    'https://***@example.org/data?X-Amz-Signature=***&part=1'
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
        query = urlencode([(k, REDACTED if is_secret_name(k) else v) for k, v in pairs], safe="*")
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


def embedded_credentials(url) -> str | None:
    """What credentials ``url`` embeds ("user info", "a secret query parameter 'sig'"), or None.

    Every link of a chained fsspec URL (``simplecache::s3://...``) is looked at.

    Examples
    --------
    >>> embedded_credentials("s3://KEY:SECRET@bucket/x")
    'user info (user:password@)'
    >>> embedded_credentials("https://h/kb?part=1&X-Amz-Signature=abc")
    "a secret query parameter 'X-Amz-Signature'"
    >>> embedded_credentials("simplecache::s3://bucket/x?versionId=3") is None
    True
    """
    text = os.fspath(url) if isinstance(url, os.PathLike) else str(url)
    for link in text.split("::"):
        if "://" not in link:
            continue  # a plain path: no user info, no query
        try:
            parts = urlsplit(link)
        except ValueError:
            return "an unparseable URL (it may hide user info)"
        if "@" in parts.netloc:
            return "user info (user:password@)"
        secret = next((name for name, _ in parse_qsl(parts.query, keep_blank_values=True) if is_secret_name(name)), None)
        if secret is not None:
            return f"a secret query parameter {secret!r}"
    return None


def refuse_credentials(url, *, what: str = "The URL") -> str:
    """Return ``url`` unchanged, or raise :class:`~prdist.errors.InputError` if it embeds credentials.

    ``what`` names the URL in the message in the caller's terms (``"--resource"``, ``"The
    'endpoint_url' storage option"``). The message shows the URL redacted.

    Examples
    --------
    >>> refuse_credentials("s3://bucket/x")
    's3://bucket/x'
    >>> try:
    ...     refuse_credentials("s3://KEY:SECRET@bucket/x", what="--resource")
    ... except InputError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    --resource 's3://***@bucket/x' embeds credentials (user info (user:password@)), which would be recorded ...
    """
    found = embedded_credentials(url)
    if found is None:
        return url
    try:
        shown = redact_url(url) if "::" not in str(url) else "::".join(redact_url(p) for p in str(url).split("::"))
    except ValueError:
        shown = "(not shown)"
    raise InputError(
        f"{what} {shown!r} embeds credentials ({found}), which would be recorded in logs, manifests "
        "and Prefect's flow-run parameters. Remove them from the URL and pass them as storage "
        "options (--storage-options '{\"key\": ..., \"secret\": ...}') or through "
        "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the store's own credential chain)."
    )


#: Characters a terminal acts on instead of showing: C0 and C1 controls and DEL (escape sequences
#: start with ESC or CSI: title changes, cursor moves, clearing), and Unicode's format controls
#: (bidirectional overrides reorder what is shown; zero-width characters hide).
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def terminal_text(text) -> str:
    r"""``text`` as a terminal can show it literally: every control character written as an escape.

    Line breaks and tabs are escaped too, so text from outside can neither start a line of its
    own nor move the cursor. Everything else (any script, any symbol) is kept.

    Examples
    --------
    >>> terminal_text("alice\x1b]0;owned\x07")
    'alice\\x1b]0;owned\\x07'
    >>> print(terminal_text("r\u00e9sum\u00e9\nnext\u202e"))
    résumé\nnext\u202e
    """
    return _UNSHOWABLE.sub(_escape, str(text))


def _escape(match: re.Match) -> str:
    return match.group().encode("unicode_escape").decode("ascii")
