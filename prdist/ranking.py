"""Rank order: descending score, ties broken by a 64-bit hash of the key.

The tie-break must not depend on how a resource is partitioned or in which order its rows are
stored, and a window that falls inside a group of tied scores should be a pseudo-random draw from
that group rather than, say, its alphabetically first keys. Hashing the key gives both. The key
itself breaks the (astronomically rare) hash collisions, so the order is total.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["key_hash", "rank_order"]


def _normalise_keys(keys) -> np.ndarray:
    arr = np.asarray(keys)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind in "OUS":
        return arr.astype(object)
    raise DataError(
        f"Item keys must be integers or strings; got dtype {arr.dtype}. "
        "Cast the key column to int64 or string."
    )


def key_hash(keys) -> np.ndarray:
    """Return a deterministic uint64 hash of every key.

    Integer keys hash by value (any integer width gives the same hash); string keys hash their
    UTF-8 text. The hash is SipHash with a fixed key (``pandas.util.hash_array``), so it is the same
    in every process, on every machine and in every release of prdist.

    >>> key_hash([1, 2]).dtype
    dtype('uint64')
    >>> bool(key_hash(np.array([7], dtype=np.int32))[0] == key_hash([7])[0])
    True
    """
    return pd.util.hash_array(_normalise_keys(keys), categorize=False)


def rank_order(scores, keys) -> np.ndarray:
    """Return the permutation that puts items in rank order (rank 1 first).

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Finite confidence scores; higher ranks first.
    keys : array-like of int or str, shape (n,)
        Unique item keys.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``order[r - 1]`` is the position of the item at rank r.

    Examples
    --------
    >>> rank_order([0.5, 0.9, 0.1], ["a", "b", "c"]).tolist()
    [1, 0, 2]
    """
    s = np.asarray(scores, dtype=np.float64)
    k = _normalise_keys(keys)
    if s.shape != k.shape or s.ndim != 1:
        raise DataError(f"scores and keys must be 1-d arrays of one length; got {s.shape} and {k.shape}.")
    if not np.isfinite(s).all():
        raise DataError("Scores must be finite; found NaN or infinity. Drop or repair those items first.")
    h = key_hash(k)
    # np.lexsort sorts by the last key first.
    return np.lexsort((k, h, -s)).astype(np.int64)
