"""MPI file reads and writes of one location (MPI_FILE_IO, format 2.2) and the call each lies in.

Runs only for locations that hold such events, as a second pass after ``kernels.location`` (whose
``Calls`` number the calls in ENTER order).  An MPI_FILE_IO event belongs to the innermost call open
at it: the MPI_File_* call that did the transfer.  Slow reference:
``tests/analyzer/kernel_references.file_io_rows_reference``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.event_codes import ENTER, EXIT, MPI_COLLEXIT, MPI_FILE_IO, OMP_COLLEXIT


@numba.njit(cache=True, nogil=True)
def file_io_rows(etype, flags, time, bytes_, n_calls):
    """``(call, flags, bytes, time)`` arrays, one entry per MPI_FILE_IO event in event order.

    ``call`` is the index (ENTER order) of the innermost open call, -1 outside every call.
    """
    n = 0
    for i in range(etype.shape[0]):
        if etype[i] == MPI_FILE_IO:
            n += 1
    call = np.empty(n, np.int64)
    fl = np.empty(n, np.int64)
    nbytes = np.empty(n, np.int64)
    at = np.empty(n, np.float64)
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
        elif t == MPI_FILE_IO:
            call[j] = stack[depth - 1] if depth > 0 else -1
            fl[j] = flags[i]
            nbytes[j] = np.int64(bytes_[i])
            at[j] = time[i]
            j += 1
    return call, fl, nbytes, at
