"""The trace's time line: raw ticks to global seconds, with the clock-offset correction.

Every process has a clock (origin and rate, ``Definitions.clock``) and may
have offset measurements against a reference clock (EPIK's convention);
the reader turns each location's ticks into seconds on one global time
line with these functions.
"""

from __future__ import annotations

import numpy as np

from .definitions import Clock, Offset


def local_to_global(local: np.ndarray, offsets: list[Offset]) -> np.ndarray:
    """Add the clock offset, interpolated linearly between the offset measurements.

    No measurement: unchanged; one: a constant shift; several: piecewise
    linear through them, the first and last segment extended beyond the
    ends (with two measurements this is exactly EPIK's correction).
    """
    if not offsets:
        return local
    if len(offsets) == 1:
        return local + offsets[0].offset
    lt = np.array([o.local_time for o in offsets])
    off = np.array([o.offset for o in offsets])
    if np.all(lt == lt[0]):  # degenerate: measured at the same instant
        return local + off.mean()
    shift = np.interp(local, lt, off)
    lo, hi = local < lt[0], local > lt[-1]
    if lo.any():
        i = int(np.argmax(lt > lt[0]))  # first measurement at a later time
        slope = (off[i] - off[0]) / (lt[i] - lt[0])
        shift[lo] = off[0] + slope * (local[lo] - lt[0])
    if hi.any():
        j = int(np.nonzero(lt < lt[-1])[0][-1])
        slope = (off[-1] - off[j]) / (lt[-1] - lt[j])
        shift[hi] = off[-1] + slope * (local[hi] - lt[-1])
    return local + shift


def ticks_to_seconds(ticks: np.ndarray, clock: Clock, offsets: list[Offset], out=None) -> np.ndarray:
    """Global seconds of raw ticks: (ticks - origin) / rate, then the offset correction."""
    # the difference is taken in integers (exact) and reinterpreted as signed, so a
    # tick before the origin gives a negative time instead of wrapping around
    delta = np.subtract(ticks, np.uint64(clock.origin)).view(np.int64)
    local = np.divide(delta, clock.ticks_per_second, out=out)
    if offsets:
        local[...] = local_to_global(local, offsets)
    return local
