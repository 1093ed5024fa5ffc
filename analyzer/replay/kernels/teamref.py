"""Team references resolved to dense team numbers (``analyzer.replay.matching.build_omp_counted``).

The location kernel names the team of a member, a barrier, a join or a nested fork by a *team reference*
``(location << 32) | k``: the k-th fork row of that location.  Resolving one is two lookups; done with NumPy over
every barrier row that was eight temporaries of the table's length (50 MB of fresh memory at 10^7 events).
Slow reference: ``tests/analyzer/test_team_refs.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies


@numba.njit(cache=True, nogil=True)
def team_numbers(ref, start, dense_of_row, out) -> bool:
    """``out[i]`` := ``dense_of_row[start[ref[i] >> 32] + (ref[i] & 0xFFFFFFFF)]``, -1 where ``ref[i]`` is negative;
    False where a reference lies outside ``start`` or ``dense_of_row`` (``out`` then partly written)."""
    low = np.int64(0xFFFFFFFF)
    for i in range(ref.shape[0]):
        r = np.int64(ref[i])
        if r < 0:
            out[i] = -1
            continue
        loc = r >> 32
        if loc >= start.shape[0]:
            return False
        row = start[loc] + (r & low)
        if row >= dense_of_row.shape[0]:
            return False
        out[i] = dense_of_row[row]
    return True


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
