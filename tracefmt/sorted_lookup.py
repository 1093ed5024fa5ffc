"""The value of a key in a sorted key column: the sparse id tables of the OTF2 decoder, the replay's team table.

A numba helper called from hot loops: without numba's runtime (``_nrt=False``) and with the binary search
written out (``np.searchsorted`` is a call that counts the references of its array), a call costs no atomic
reference counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .jitcache import track_dependencies


@njit(cache=True, nogil=True, _nrt=False)
def search(x, keys, vals):
    """``vals[i]`` where ``keys[i] == x`` in the ascending ``keys``, -1 if ``x`` is absent."""
    lo, hi = 0, keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < keys.shape[0] and keys[lo] == x:
        return vals[lo]
    return np.int64(-1)


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
