"""Numba kernels of the trace library; plain typed arrays in, plain values out.

Each kernel has a slow, obviously correct counterpart it is tested against:
``nesting_status`` (through ``first_nesting_error``) the validator's
per-event Python walk, ``decode_records`` the reader's vectorised numpy
decoder.  Callers use a kernel only where it pays off (long event streams),
so reading or checking a short trace never imports numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .jitcache import track_dependencies
from .nesting import EXIT_EMPTY_STACK, EXIT_MISMATCH, OK, UNCLOSED


@njit(cache=True, nogil=True)
def nesting_status(types, regions, enter_code, exit_codes):
    """``(status, event)``: the first break of ENTER/EXIT nesting, as a :mod:`tracefmt.nesting` code.

    `types`/`regions` are one location's event types and `a` fields.  An
    event whose type is in `exit_codes` must name the innermost open region
    (EXIT_EMPTY_STACK / EXIT_MISMATCH at that event); regions still open at
    the end give UNCLOSED with ``event = len(types)``; OK with -1.
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
                    if depth == 0:
                        return EXIT_EMPTY_STACK, i
                    if stack[depth - 1] != regions[i]:
                        return EXIT_MISMATCH, i
                    depth -= 1
                    break
    if depth != 0:
        return UNCLOSED, n
    return OK, -1


def first_nesting_error(types, regions, enter_code, exit_codes) -> int:
    """Index of the first event that breaks ENTER/EXIT nesting, -1 if none, len(types) if regions stay open.

    The validator's yes/no gate (it words every problem in its Python walk):
    :func:`nesting_status` without the status.
    """
    return int(nesting_status(types, regions, enter_code, exit_codes)[1])


#: 64-bit words per 40-byte event record
RECORD_WORDS = 5


@njit(cache=True, nogil=True, inline="always")
def _bswap32(x):
    x = np.uint32(x)
    return np.uint32(
        ((x & np.uint32(0xFF)) << np.uint32(24))
        | ((x & np.uint32(0xFF00)) << np.uint32(8))
        | ((x >> np.uint32(8)) & np.uint32(0xFF00))
        | (x >> np.uint32(24))
    )


@njit(cache=True, nogil=True, inline="always")
def _bswap64(x):
    lo = np.uint64(_bswap32(x & np.uint64(0xFFFFFFFF)))
    hi = np.uint64(_bswap32(x >> np.uint64(32)))
    return (lo << np.uint64(32)) | hi


@njit(cache=True, nogil=True)
def decode_records(words, swap, origin, ticks_per_second, at,
                   ticks, time, type_, flags, a, b, c, d, e):
    """Split raw event records into the output columns at rows at..at+k, in one pass.

    `words` is a (k, 5) uint64 array holding k 40-byte records as read from
    the file, loaded in little-endian order (the host's; the caller checks).
    Field positions follow ``layout.event_dtype``: word 0 the ticks, word 1
    type | flags << 8 | reserved << 16 | a << 32, word 2 b | c << 32, words 3
    and 4 d and e.  With `swap` the file is big-endian: every field's bytes
    are reversed in place, so the same words hold the byte-reversed fields.

    ``time`` gets (ticks - origin) / ticks_per_second, the difference taken
    in 64-bit integers and read as signed, as ``clock.ticks_to_seconds``
    does (bit-identical results; clock offsets are applied by the caller).
    """
    k = words.shape[0]
    lo32 = np.uint64(0xFFFFFFFF)
    byte = np.uint64(0xFF)
    if swap:
        for i in range(k):
            w1 = words[i, 1]
            w2 = words[i, 2]
            t = _bswap64(words[i, 0])
            j = at + i
            ticks[j] = t
            time[j] = np.float64(np.int64(t - origin)) / ticks_per_second
            type_[j] = np.uint8(w1 & byte)
            flags[j] = np.uint8((w1 >> np.uint64(8)) & byte)
            a[j] = _bswap32(w1 >> np.uint64(32))
            b[j] = _bswap32(w2 & lo32)
            c[j] = _bswap32(w2 >> np.uint64(32))
            d[j] = _bswap64(words[i, 3])
            e[j] = _bswap64(words[i, 4])
    else:
        for i in range(k):
            w1 = words[i, 1]
            w2 = words[i, 2]
            t = words[i, 0]
            j = at + i
            ticks[j] = t
            time[j] = np.float64(np.int64(t - origin)) / ticks_per_second
            type_[j] = np.uint8(w1 & byte)
            flags[j] = np.uint8((w1 >> np.uint64(8)) & byte)
            a[j] = np.uint32(w1 >> np.uint64(32))
            b[j] = np.uint32(w2 & lo32)
            c[j] = np.uint32(w2 >> np.uint64(32))
            d[j] = words[i, 3]
            e[j] = words[i, 4]


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
