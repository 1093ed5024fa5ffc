"""A fixed-capacity hash table from uint64 ids to int64 values, in plain arrays.

The per-location kernel pairs request ids (an Isend with its completion, an
Irecv's post with its receive) while it walks.  numba's typed ``Dict`` costs
about 100 ns per operation (a call into the runtime and reference counting
each time), which dominated the walk of MPI-heavy locations; this table
costs a few ns.  Open addressing with linear probing; removed entries leave
a tombstone, so the capacity must exceed the number of ``put`` calls ever
made (``new_table(n)`` sizes it for ``n`` puts with at least half of the
slots always empty).  Slow reference: a Python dict (tests/analyzer/test_idtable.py).
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

EMPTY = 0
USED = 1
REMOVED = 2


@numba.njit(cache=True, nogil=True)
def new_table(max_puts):
    """Arrays ``(keys, values, state)`` for up to ``max_puts`` insertions in all."""
    cap = 16
    while cap < 2 * max_puts + 2:
        cap *= 2
    return np.zeros(cap, np.uint64), np.zeros(cap, np.int64), np.zeros(cap, np.uint8)


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(keys, key):
    # Fibonacci hashing: multiply by 2^64 / golden ratio, keep the high bits
    h = key * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(32)) & (keys.shape[0] - 1)


# put and take run without numba's runtime: the walk calls them for every request event, and a runtime
# function counts the references of its three arrays atomically on every call (a tenth of the walk's time)
@numba.njit(cache=True, nogil=True, _nrt=False)
def put(keys, values, state, key, value):
    """Map ``key`` to ``value`` (replacing an existing entry)."""
    mask = keys.shape[0] - 1
    i = _slot(keys, key)
    free = -1
    while state[i] != EMPTY:
        if state[i] == USED and keys[i] == key:
            values[i] = value
            return
        if state[i] == REMOVED and free < 0:
            free = i
        i = (i + 1) & mask
    if free < 0:
        free = i
    keys[free] = key
    values[free] = value
    state[free] = USED


@numba.njit(cache=True, nogil=True, _nrt=False)
def take(keys, values, state, key):
    """Remove ``key`` and return its value, or -1 when it is absent."""
    mask = keys.shape[0] - 1
    i = _slot(keys, key)
    while state[i] != EMPTY:
        if state[i] == USED and keys[i] == key:
            state[i] = REMOVED
            return values[i]
        i = (i + 1) & mask
    return -1


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
