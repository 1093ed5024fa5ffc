"""MPI one-sided events of one location (MPI_RMA_PUT / _GET / _ATOMIC / _SYNC, format 2.3) and the call each
lies in.

Runs only for locations that hold such events, as a second pass after ``kernels.location`` (whose ``Calls``
number the calls in ENTER order), like ``kernels.file_io``.  An RMA event belongs to the innermost call open
at it: the MPI call that made it, whose ENTER and EXIT times the RMA wait states compare.  Slow reference:
``tests/analyzer/test_rma_kernel.rma_rows_reference``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.event_codes import (ENTER, EXIT, MPI_COLLEXIT, MPI_RMA_ATOMIC, MPI_RMA_GET, MPI_RMA_PUT, MPI_RMA_SYNC,
                                  OMP_COLLEXIT)


@numba.njit(cache=True, nogil=True)
def rma_rows(etype, n_calls):
    """``(event, call)`` arrays, one entry per RMA event in event order: its index in the location's events and
    the index (ENTER order) of the innermost open call, -1 outside every call."""
    n = 0
    for i in range(etype.shape[0]):
        t = etype[i]
        if t == MPI_RMA_PUT or t == MPI_RMA_GET or t == MPI_RMA_ATOMIC or t == MPI_RMA_SYNC:
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
        elif t == MPI_RMA_PUT or t == MPI_RMA_GET or t == MPI_RMA_ATOMIC or t == MPI_RMA_SYNC:
            event[j] = i
            call[j] = stack[depth - 1] if depth > 0 else -1
            j += 1
    return event, call
