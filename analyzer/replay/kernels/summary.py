"""Per-location reduction done in one linear pass instead of numpy sorts.

``call_summary`` turns a location's call instances into visits, inclusive
and exclusive time per call-tree node.  Slow reference:
``tests/analyzer/kernel_references.call_summary_reference``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

from .bundles import CallSummary


@numba.njit(cache=True, nogil=True)
def call_summary(calls, n_nodes):
    """A :class:`~.bundles.CallSummary` of the nodes visited by ``calls`` (:class:`~.bundles.Calls`).

    Inclusive time sums EXIT - ENTER per node; exclusive time subtracts the
    inclusive time of each call's direct child calls on the same location.
    Sums are taken in call (ENTER) order, the order the former numpy
    version (``bincount``) used, so results are bit-identical.
    """
    call_node, call_enter, call_exit, call_parent = calls.node, calls.enter, calls.exit, calls.parent
    visits = np.zeros(n_nodes, np.int64)
    incl = np.zeros(n_nodes, np.float64)
    child = np.zeros(n_nodes, np.float64)
    n = call_node.shape[0]
    for i in range(n):
        node = call_node[i]
        d = call_exit[i] - call_enter[i]
        visits[node] += 1
        incl[node] += d
    for i in range(n):
        p = call_parent[i]
        if p >= 0:
            child[call_node[p]] += call_exit[i] - call_enter[i]
    k = 0
    for b in range(n_nodes):
        if visits[b] > 0:
            k += 1
    nodes = np.empty(k, np.int64)
    v = np.empty(k, np.int64)
    inc = np.empty(k, np.float64)
    exc = np.empty(k, np.float64)
    j = 0
    for b in range(n_nodes):
        if visits[b] > 0:
            nodes[j] = b
            v[j] = visits[b]
            inc[j] = incl[b]
            exc[j] = incl[b] - child[b]
            j += 1
    return CallSummary(nodes, v, inc, exc)


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
