"""Hardware-counter increments per call path of one location.

A COUNTER record (a = metric id, d = value) applies to the ENTER or EXIT
just before it (``tracefmt.layout.EventType``).  For an accumulated counter
the inclusive increment of a call is its reading at the EXIT minus its
reading at the ENTER; the exclusive increment subtracts the inclusive
increments of the call's direct children, exactly as exclusive time does.
A call without both readings of a metric contributes nothing for it (its
parent then keeps that part as its own).  Runs only for traces that define
metrics, as a second pass after ``kernels.location``.  Slow reference:
``tests/analyzer/kernel_references.counter_increments_reference``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies
from tracefmt.layout import EventType

# plain ints: numba treats module-level ints as compile-time constants
ENTER = int(EventType.ENTER)
EXIT = int(EventType.EXIT)
MPI_COLLEXIT = int(EventType.MPI_COLLEXIT)
OMP_COLLEXIT = int(EventType.OMP_COLLEXIT)
COUNTER = int(EventType.COUNTER)


@numba.njit(cache=True, nogil=True)
def counter_increments(events, calls, metric_slot, slot_is_double, n_nodes):
    """float64 ``[n_nodes, n_slots]``: exclusive increments per builder node.

    ``events`` (:class:`tracefmt.columns.EventColumns`) and ``calls``
    (:class:`~.bundles.Calls`, in ENTER order) are one location's, as
    ``kernels.location`` walked them.  ``metric_slot[metric id]`` is the
    column of that metric, -1 for metrics not followed (sampled ones);
    ``slot_is_double[slot]`` says the value is stored as the bits of an
    IEEE double rather than an unsigned integer.
    """
    etype, ea, ed = events.type, events.a, events.d
    call_node, call_parent = calls.node, calls.parent
    n_slots = slot_is_double.shape[0]
    n_calls = call_node.shape[0]
    first = np.zeros((n_calls, n_slots), np.uint64)
    last = np.zeros((n_calls, n_slots), np.uint64)
    has_first = np.zeros((n_calls, n_slots), np.bool_)
    has_last = np.zeros((n_calls, n_slots), np.bool_)
    stack = np.empty(n_calls + 1, np.int64)
    depth = 0
    k = 0
    here = -1  # the call whose ENTER (at_exit False) or EXIT (True) the next COUNTER belongs to
    at_exit = False
    for i in range(etype.shape[0]):
        t = etype[i]
        if t == ENTER and k < n_calls:
            stack[depth] = k
            depth += 1
            here = k
            at_exit = False
            k += 1
        elif (t == EXIT or t == MPI_COLLEXIT or t == OMP_COLLEXIT) and depth > 0:
            depth -= 1
            here = stack[depth]
            at_exit = True
        elif t == COUNTER:
            m = np.int64(ea[i])
            s = metric_slot[m] if m < metric_slot.shape[0] else -1
            if here >= 0 and s >= 0:
                if at_exit:
                    last[here, s] = ed[i]
                    has_last[here, s] = True
                else:
                    first[here, s] = ed[i]
                    has_first[here, s] = True
        else:
            here = -1  # a reading after any other event is not a call boundary
    first_f = first.view(np.float64)
    last_f = last.view(np.float64)
    incl = np.zeros((n_nodes, n_slots), np.float64)
    child = np.zeros((n_nodes, n_slots), np.float64)
    for c in range(n_calls):
        for s in range(n_slots):
            if has_first[c, s] and has_last[c, s]:
                if slot_is_double[s]:
                    d = last_f[c, s] - first_f[c, s]
                else:
                    d = np.float64(np.int64(last[c, s] - first[c, s]))  # wraps like the counter
                incl[call_node[c], s] += d
                p = call_parent[c]
                if p >= 0:
                    child[call_node[p], s] += d
    return incl - child


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
