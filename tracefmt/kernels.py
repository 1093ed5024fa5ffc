"""Numba kernels of the trace library; plain typed arrays in, plain values out.

Each kernel has a pure-Python counterpart (the validator's per-event loop)
that it is tested against; callers use a kernel only where it pays off (long
event streams), so short traces never import numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def first_nesting_error(types, regions, enter_code, exit_codes):
    """Index of the first event that breaks ENTER/EXIT nesting, or -1.

    `types`/`regions` are one location's event types and `a` fields.  An
    event whose type is in `exit_codes` must name the innermost open region.
    Returns len(types) when everything matches but regions stay open at the end.
    """
    n = types.shape[0]
    stack = np.empty(n, np.uint32)
    depth = 0
    for i in range(n):
        t = types[i]
        if t == enter_code:
            stack[depth] = regions[i]
            depth += 1
        else:
            for x in exit_codes:
                if t == x:
                    if depth == 0 or stack[depth - 1] != regions[i]:
                        return i
                    depth -= 1
                    break
    if depth != 0:
        return n
    return -1
