"""Rank order: descending score, ties broken by a 64-bit hash of the key.

The tie-break must not depend on how a resource is partitioned or in which order its rows are
stored, and a window that falls inside a group of tied scores should be a pseudo-random draw from
that group rather than, say, its alphabetically first keys. Hashing the key gives both. The key
itself breaks the (astronomically rare) hash collisions, so the order is total.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prdist.errors import DataError

__all__ = [
    "RankPosition",
    "as_key_array",
    "descending_ordinal",
    "key_hash",
    "key_ordered_rows",
    "rank_order",
    "rank_sort",
    "score_of_ordinal",
    "sorted_block_order",
]

_SIGN = np.uint64(1 << 63)


def as_key_array(keys) -> np.ndarray:
    """Item keys as the array rank order works on: int64 for integer keys, object for text.

    Any integer width gives the same int64 keys, so a key hashes and compares alike whatever
    column type a resource stores it in. (The label store's text form of a key is
    :func:`prdist.dataflow.labels.store.normalise_keys`.)

    >>> as_key_array(np.array([3, 1], dtype=np.int16)).dtype
    dtype('int64')
    >>> as_key_array(["a", "b"]).dtype
    dtype('O')
    """
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
    UTF-8 text. The hash is ``pandas.util.hash_array``'s (SipHash with a fixed key for text, then
    a 64-bit mix), so it is the same in every process, on every machine and in every release of
    prdist; integer keys get the mix computed here with NumPy (pandas, loaded for text keys
    only, gives the same values).

    >>> key_hash([1, 2]).dtype
    dtype('uint64')
    >>> bool(key_hash(np.array([7], dtype=np.int32))[0] == key_hash([7])[0])
    True
    """
    keys = as_key_array(keys)
    if keys.dtype.kind != "i":
        import pandas as pd

        return pd.util.hash_array(keys, categorize=False)
    vals = keys.view(np.uint64).copy()
    vals ^= vals >> np.uint64(30)
    vals *= np.uint64(0xBF58476D1CE4E5B9)
    vals ^= vals >> np.uint64(27)
    vals *= np.uint64(0x94D049BB133111EB)
    vals ^= vals >> np.uint64(31)
    return vals


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
    k = as_key_array(keys)
    if s.shape != k.shape or s.ndim != 1:
        raise DataError(f"scores and keys must be 1-d arrays of one length; got {s.shape} and {k.shape}.")
    if not np.isfinite(s).all():
        raise DataError("Scores must be finite; found NaN or infinity. Drop or repair those items first.")
    return rank_sort(descending_ordinal(s), key_hash(k), k).astype(np.int64)


def descending_ordinal(scores: np.ndarray) -> np.ndarray:
    """Map float64 scores to uint64 so that ascending ordinals are descending scores.

    Exact and order-preserving (IEEE-754 bit trick); -0.0 and 0.0 share an ordinal, as they
    compare equal.

    >>> descending_ordinal(np.array([1.0, -2.0, 0.0, -0.0, 3.0])).argsort(kind="stable").tolist()
    [4, 0, 2, 3, 1]
    """
    bits = (np.asarray(scores, dtype=np.float64) + 0.0).view(np.uint64)  # + 0.0: -0.0 -> 0.0
    # Ascending order: flip every bit of a negative score, only the sign bit of a positive one;
    # the descending ordinal is its complement. The arithmetic shift gives the all-ones mask of
    # the negatives without a branch, and every step runs in place on one temporary.
    flip = (bits.view(np.int64) >> 63).view(np.uint64)
    flip |= _SIGN
    np.bitwise_xor(flip, bits, out=flip)
    return np.invert(flip, out=flip)


def score_of_ordinal(ordinals: np.ndarray) -> np.ndarray:
    """The float64 score of each descending ordinal: the inverse of :func:`descending_ordinal`.

    >>> score_of_ordinal(descending_ordinal(np.array([1.5, -2.0, 0.0, -np.inf]))).tolist()
    [1.5, -2.0, 0.0, -inf]
    """
    ascending = ~np.asarray(ordinals, dtype=np.uint64)
    positive = (ascending & _SIGN) != 0
    return np.where(positive, ascending ^ _SIGN, ~ascending).view(np.float64)


def rank_sort(ordinals: np.ndarray, hashes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Permutation putting rows in rank order: ordinal, then key hash, then key.

    The one definition of rank order; :func:`rank_order` and every Dask step sort by it.
    """
    # np.lexsort sorts by the last key first.
    return np.lexsort((keys, hashes, ordinals))


def sorted_block_order(scores: np.ndarray, keys: np.ndarray, key_ordered: np.ndarray | None = None) -> np.ndarray:
    """Rank order of the rows of a block read from a sorted resource (see :func:`rank_sort`).

    The rows are already in descending score order but for the order inside runs of tied
    scores, which is by key hash: only the tied rows (:func:`key_ordered_rows`) are hashed and
    sorted, not the block (sorting whole blocks took two thirds of the time of a sorted
    extraction). A block that is not in descending order inside (statistics only check the
    row-group boundaries) gets a full sort, which is still right. ``key_ordered``: the block's
    :func:`key_ordered_rows`, when the caller has them already.

    >>> sorted_block_order(np.array([3.0, 2.0, 2.0, 1.0]), np.array([7, 8, 9, 10])).tolist() in ([0, 1, 2, 3], [0, 2, 1, 3])
    True
    """
    rows = key_ordered_rows(scores) if key_ordered is None else key_ordered
    if rows.size == 0:
        return np.arange(scores.size)
    ordinals = descending_ordinal(scores)
    if rows.size == scores.size and np.any(scores[1:] > scores[:-1]):
        return rank_sort(ordinals, key_hash(keys), keys)
    order = np.arange(scores.size)
    order[rows] = rows[rank_sort(ordinals[rows], key_hash(keys[rows]), keys[rows])]
    return order


def key_ordered_rows(scores: np.ndarray) -> np.ndarray:
    """The rows of a block whose places in rank order their keys decide: in a block in
    descending score order, those tied with a neighbour; in any other block, every row.

    >>> key_ordered_rows(np.array([3.0, 2.0, 2.0, 1.0])).tolist(), key_ordered_rows(np.array([1.0, 2.0])).tolist()
    ([1, 2], [0, 1])
    """
    # Finite scores compare as their ordinals do (-0.0 and 0.0 alike): the common checks need no
    # ordinals.
    before, after = scores[:-1], scores[1:]
    if np.all(after < before):
        return np.empty(0, dtype=np.intp)
    if np.any(after > before):
        return np.arange(scores.size)
    same = after == before
    tied = np.zeros(scores.size, dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    return np.flatnonzero(tied)


@dataclass(frozen=True)
class RankPosition:
    """Where an item stands in rank order: (descending ordinal of its score, key hash, key).

    Items compare by this triple exactly as :func:`rank_sort` orders them, so membership in the
    top k is "at or before the item at rank k", decided row by row without a sort.

    >>> k = RankPosition.of(0.5, "b")
    >>> k.at_or_before(descending_ordinal(np.array([0.9, 0.5, 0.1])), lambda: np.array(["a", "b", "c"], dtype=object)).tolist()
    [True, True, False]
    """

    ordinal: int
    hash: int
    key: object

    @classmethod
    def of(cls, score: float, key) -> RankPosition:
        """The position of the item with this score and key."""
        keys = as_key_array([key])
        return cls(int(descending_ordinal(np.array([score]))[0]), int(key_hash(keys)[0]), keys[0].item() if keys.dtype.kind in "iu" else keys[0])

    def at_or_before(self, ordinals: np.ndarray, keys_of) -> np.ndarray:
        """Whether each item (by its ordinal) stands at or before this position.

        ``keys_of()`` returns the items' keys; it is called only when some item ties this one on
        score (reading keys may cost a column read).
        """
        threshold = np.uint64(self.ordinal)
        member = ordinals < threshold
        tied = ordinals == threshold
        if tied.any():
            tied_keys = keys_of()[tied]
            hashes = key_hash(tied_keys)
            h = np.uint64(self.hash)
            member[tied] = (hashes < h) | ((hashes == h) & (tied_keys <= self.key))
        return member
