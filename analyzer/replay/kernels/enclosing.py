"""Events of chosen types on one location and the call each lies in.

Runs only for locations that hold such events (MPI file I/O, format 2.2; MPI one-sided, format 2.3), as a
second pass after ``kernels.location``, whose ``Calls`` number the calls in ENTER order.  An event belongs to
the innermost call open at it: the MPI call that made it.  Slow references:
``tests/analyzer/kernel_references.file_io_rows_reference``, ``tests/analyzer/test_rma_kernel.rma_rows_reference``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.event_codes import ENTER, EXIT, MPI_COLLEXIT, OMP_COLLEXIT
from tracefmt.jitcache import track_dependencies


def type_mask(*codes: int) -> np.ndarray:
    """The ``wanted`` argument of :func:`events_in_calls`: one flag per event type code."""
    mask = np.zeros(256, np.bool_)
    mask[list(codes)] = True
    return mask


@numba.njit(cache=True, nogil=True)
def events_in_calls(etype, wanted, n_calls):
    """``(event, call)`` arrays, one entry per event whose type ``wanted`` flags, in event order: its index in
    the location's events and the index (ENTER order) of the innermost open call, -1 outside every call."""
    n = 0
    for i in range(etype.shape[0]):
        if wanted[etype[i]]:
            n += 1
    event = np.empty(n, np.int64)
    call = np.empty(n, np.int64)
    stack = np.empty(n_calls + 1, np.int64)
    depth = 0
    k = 0  # calls entered so far
    j = 0
    for i in range(etype.shape[0]):
        t = etype[i]
        if t == ENTER:
            stack[depth] = k
            depth += 1
            k += 1
        elif t == EXIT or t == MPI_COLLEXIT or t == OMP_COLLEXIT:
            if depth > 0:
                depth -= 1
        elif wanted[t]:
            event[j] = i
            call[j] = stack[depth - 1] if depth > 0 else -1
            j += 1
    return event, call


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
