"""Numba helpers of the native OTF2 reader's kernels: OTF2's compressed integers and full words.

Shared by ``otf2_kernels`` (events) and ``otf2_rma_kernels`` (one-sided records); see ``otf2_defs`` for the
encoding.  Sparse id tables are looked up with ``sorted_lookup.search`` (dense ones are indexed
directly by the decoder: its hot loop has no calls with array arguments; inlined, such calls kept numba from
pruning it, and the loop ran at half speed).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .jitcache import track_dependencies

# communicator kinds (by the location's comm table index)
COMM_UNKNOWN, COMM_RANKS, COMM_SELF = 0, 1, 2

_U32_ALL = np.uint64(0xFFFFFFFF)
_U64_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def comp(buf, p, end, big, width):
    """(value, next position) of a compressed integer at p; next position -1 when it is invalid."""
    if p < 0 or p >= end:
        return np.uint64(0), -1
    n = buf[p]
    if n == 0:
        return np.uint64(0), p + 1
    if n == 0xFF:
        return (_U32_ALL if width == 4 else _U64_ALL), p + 1
    if n > width or p + 1 + n > end:
        return np.uint64(0), -1
    v = np.uint64(0)
    if big:
        for i in range(n):
            v = (v << np.uint64(8)) | np.uint64(buf[p + 1 + i])
    else:
        for i in range(n):
            v |= np.uint64(buf[p + 1 + i]) << np.uint64(8 * i)
    return v, p + 1 + n


@njit(cache=True, nogil=True, inline="always")
def full64(buf, p, big):
    v = np.uint64(0)
    if big:
        for i in range(8):
            v = (v << np.uint64(8)) | np.uint64(buf[p + i])
    else:
        for i in range(8):
            v |= np.uint64(buf[p + i]) << np.uint64(8 * i)
    return v


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
