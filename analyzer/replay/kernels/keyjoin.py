"""Joining rows by a (location, key) pair in one pass: the links of the cut points to their table rows.

``first_rows(b_loc, b_key, a_loc, a_key)`` gives, for every row ``i`` of *a*, the smallest ``j`` with
``b_loc[j] == a_loc[i]`` and ``b_key[j] == a_key[i]``, or -1.  Keys are int64 or float64 (compared with
``==``: a NaN matches nothing; -0.0 equals 0.0).  The tables joined here hold each location's rows in
event order, so *b*'s keys rise within each location: then every row of *a* is found by walking forward
in its location's run of *b* from where the previous row of that location stopped (a binary search where
*a*'s keys go back); *b* is read where it lies when it is grouped by location already (the replay's tables
are), else through a stable counting sort.  Otherwise an open-addressing hash table over *b* does it, on
int64 hash inputs equal for equal keys (the key itself for integers, the bits of ``time + 0.0`` for
times).  Either way no sort of both sides by (location, key), which is what the same join costs in NumPy,
and no copy of the columns: at 10^7 events the barrier join alone made 40 MB of int64 and +0.0 copies.

``fill_rows`` and ``remap`` are the other two steps of linking cut points (``analyzer.replay.timeline``).

Slow reference: ``tests/analyzer/timeline_reference.py`` (``first_rows_reference``,
``fill_rows_reference``).
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(loc, bits, shift):
    # the key's bits folded (a time's low mantissa bits may all be zero) and mixed with the location, then
    # Fibonacci hashing: the high bits of the product
    x = np.uint64(bits)
    x ^= (x >> np.uint64(29)) ^ (np.uint64(loc) * np.uint64(0xBF58476D1CE4E5B9))
    return np.int64((x * np.uint64(0x9E3779B97F4A7C15)) >> shift)


@numba.njit(cache=True, nogil=True)
def hashed_rows(b_loc, b_key, b_bits, a_loc, a_key, a_bits, out):
    """What :func:`walk_rows` does, through an open-addressing hash table over *b* (any order, any keys)."""
    nb = b_loc.shape[0]
    cap, bits = 16, 4
    while cap < 2 * nb + 2:
        cap *= 2
        bits += 1
    mask = cap - 1
    shift = np.uint64(64 - bits)
    slot_row = np.full(cap, -1, np.int64)
    for j in range(nb):
        i = _slot(b_loc[j], b_bits[j], shift)
        while slot_row[i] >= 0:
            r = slot_row[i]
            if b_loc[r] == b_loc[j] and b_key[r] == b_key[j]:
                break  # an earlier row has this key: it stays
            i = (i + 1) & mask
        if slot_row[i] < 0:
            slot_row[i] = j
    for k in range(a_loc.shape[0]):
        i = _slot(a_loc[k], a_bits[k], shift)
        while slot_row[i] >= 0:
            r = slot_row[i]
            if b_loc[r] == a_loc[k] and b_key[r] == a_key[k]:
                out[k] = r
                break
            i = (i + 1) & mask


@numba.njit(cache=True, nogil=True)
def walk_rows(b_loc, b_key, a_loc, a_key, a_kind, want, out) -> bool:
    """``out[i]`` := the first row of *b* with the location and key of row ``i`` of *a*, where there is one
    (``out`` stays as it is elsewhere), by walking *b*'s location runs; with ``a_kind`` not empty only the rows
    of *a* of kind ``want`` (the cut points of one kind linked straight into the table's column: no gathered
    copies of their locations and times).  False, and ``out`` untouched, where *b* has a negative location,
    a NaN key, keys that fall within a location or locations too sparse to count: the caller then hashes
    (:func:`hashed_rows`).  *b* grouped by location already (the replay's tables are) is walked where it
    lies, else through a counting sort of its rows."""
    na, nb = a_loc.shape[0], b_loc.shape[0]
    if na == 0 or nb == 0:
        return True
    n_loc = 0
    grouped = True
    for j in range(nb):
        if b_loc[j] < 0 or b_key[j] != b_key[j]:  # a negative location or a NaN: no runs to walk
            return False
        if j and b_loc[j] < b_loc[j - 1]:
            grouped = False
        n_loc = max(n_loc, b_loc[j] + 1)
    if n_loc > 4 * nb + (1 << 16):  # locations too sparse to count per location
        return False
    off = np.zeros(n_loc + 1, np.int64)
    for j in range(nb):
        off[b_loc[j] + 1] += 1
    for l in range(n_loc):
        off[l + 1] += off[l]
    by_loc = np.empty(0 if grouped else nb, np.int64)  # b's rows grouped by location, in row order within each
    if not grouped:
        fill = off[:-1].copy()
        for j in range(nb):
            by_loc[fill[b_loc[j]]] = j
            fill[b_loc[j]] += 1
    for l in range(n_loc):
        for x in range(off[l] + 1, off[l + 1]):
            if b_key[_row(by_loc, grouped, x)] < b_key[_row(by_loc, grouped, x - 1)]:
                return False
    ptr = off[:-1].copy()  # per location: the first row of its run whose key is not below the last key asked
    last = np.empty(n_loc, b_key.dtype)
    asked = np.zeros(n_loc, np.bool_)
    every = a_kind.shape[0] == 0
    for k in range(na):
        if not every and a_kind[k] != want:
            continue
        l = a_loc[k]
        if l < 0 or l >= n_loc:
            continue
        key = a_key[k]
        end = off[l + 1]
        if asked[l] and key >= last[l]:
            p = ptr[l]
            while p < end and b_key[_row(by_loc, grouped, p)] < key:
                p += 1
        else:  # the first row of this location, or a key below the last one: search the whole run
            lo, hi = off[l], end
            while lo < hi:
                mid = (lo + hi) >> 1
                if b_key[_row(by_loc, grouped, mid)] < key:
                    lo = mid + 1
                else:
                    hi = mid
            p = lo
        ptr[l] = p
        last[l] = key
        asked[l] = True
        if p < end and b_key[_row(by_loc, grouped, p)] == key:
            out[k] = _row(by_loc, grouped, p)
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _row(by_loc, grouped, x):
    """The row of *b* at place ``x`` of its location-grouped order."""
    return x if grouped else by_loc[x]


def first_rows(b_loc, b_key, a_loc, a_key) -> np.ndarray:
    """Per row of *a*: the first row of *b* with the same location and key, -1 where there is none.  Locations
    int32, keys both int64 or both float64 (as ``analyzer.replay.timeline._join`` passes them); the hash
    inputs are made only where the walk cannot do it."""
    out = np.full(len(a_loc), -1, np.int64)
    if not walk_rows(b_loc, b_key, a_loc, a_key, _EVERY, 0, out):
        hashed_rows(b_loc, b_key, _bits(b_key), a_loc, a_key, _bits(a_key), out)
    return out


_EVERY = np.zeros(0, np.int8)  # walk_rows: no kind filter


def _bits(key: np.ndarray) -> np.ndarray:
    """int64 hash inputs equal for equal keys: the key itself, or the bits of ``time + 0.0`` (-0.0 -> 0.0)."""
    return (key + 0.0).view(np.int64) if key.dtype.kind == "f" else key


@numba.njit(cache=True, nogil=True)
def fill_rows(row, kind, cut_off, want, loc, cut, rows):
    """Point ``cut_off[loc[j]] + cut[j] - 1`` (cut points numbered from 1 per location, stored location by
    location) gets ``rows[j]`` where it is of kind ``want`` and no earlier ``j`` gave it one; ``row``: -1
    where unset, changed in place."""
    n_loc = cut_off.shape[0] - 1
    for j in range(loc.shape[0]):
        l, c = loc[j], cut[j]
        if l < 0 or l >= n_loc or c < 1 or c > cut_off[l + 1] - cut_off[l]:
            continue
        g = cut_off[l] + c - 1
        if kind[g] == want and row[g] < 0:
            row[g] = rows[j]


@numba.njit(cache=True, nogil=True)
def remap(node, new_id):
    """``node[i] := new_id[node[i]]`` in place (int32; a negative node, none, becomes -1): no second array as long
    as the table.  A node outside ``new_id`` is an error in the call tree: IndexError, nothing changed."""
    for i in range(node.shape[0]):
        if node[i] >= new_id.shape[0]:
            raise IndexError("call-tree node outside the merged tree")
    for i in range(node.shape[0]):
        if node[i] >= 0:
            node[i] = new_id[node[i]]
        elif node[i] < -1:
            node[i] = -1
    return node


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
