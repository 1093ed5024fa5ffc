"""Time order of one location's events: the replay's check that time never goes backwards, and the repair
``--salvage`` makes (every time raised to the latest before it)."""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies


@numba.njit(cache=True, nogil=True)
def backwards(t):
    """``(n, first, worst)``: how many events are earlier than the event before them, the index of the first
    (-1: none) and the largest amount (s) an event lies before the latest time ahead of it."""
    n = 0
    first = -1
    worst = 0.0
    if len(t) == 0:
        return n, first, worst
    for i in range(1, len(t)):  # a count without a running maximum vectorises: in order, that is all
        n += t[i] < t[i - 1]
    if n == 0:
        return n, first, worst
    n = 0
    hi = t[0]
    for i in range(1, len(t)):
        if t[i] < t[i - 1]:
            n += 1
            if first < 0:
                first = i
        if t[i] < hi:
            if hi - t[i] > worst:
                worst = hi - t[i]
        else:
            hi = t[i]
    return n, first, worst


@numba.njit(cache=True, nogil=True)
def clamp(t) -> None:
    """Raise every time to the latest time before it, in place: no duration comes out negative."""
    if len(t) == 0:
        return
    hi = t[0]
    for i in range(1, len(t)):
        if t[i] < hi:
            t[i] = hi
        else:
            hi = t[i]


def check_order(t: np.ndarray) -> tuple[int, int, float]:
    """:func:`backwards` on a float64 array."""
    n, first, worst = backwards(np.ascontiguousarray(t, dtype=np.float64))
    return int(n), int(first), float(worst)


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
