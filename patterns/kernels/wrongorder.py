"""SCOUT's Late Sender / wrong order ring buffer, one pass per receiving location."""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

#: SCOUT keeps the last 100 Late Sender instances per location
RING_SIZE = 100


@numba.njit(cache=True, nogil=True)
def wrong_order(loc, kind, send_time, source, instance, ring_size):
    """Replay the receive steps of every location in order.

    Steps are sorted by (location, position).  ``kind`` 0 = a Late Sender
    instance enters the ring (``instance`` is its id, ``send_time`` and
    ``source`` those of its message); 1 = a receive checks the ring: every
    buffered instance whose message was sent later than this receive's
    message is wrong order and leaves the ring.

    Returns per instance id: ``wo`` (bool) and ``same`` (the wrong-order
    receive came from the same source as the buffered one).
    """
    n_inst = 0
    for i in range(kind.shape[0]):
        if kind[i] == 0 and instance[i] + 1 > n_inst:
            n_inst = instance[i] + 1
    wo = np.zeros(n_inst, np.bool_)
    same = np.zeros(n_inst, np.bool_)
    ring_inst = np.empty(ring_size, np.int64)
    ring_time = np.empty(ring_size, np.float64)
    ring_src = np.empty(ring_size, np.int64)
    count = 0
    cur = -1
    for i in range(kind.shape[0]):
        if loc[i] != cur:
            cur = loc[i]
            count = 0
        if kind[i] == 0:
            if count == ring_size:  # drop the oldest
                for k in range(1, count):
                    ring_inst[k - 1] = ring_inst[k]
                    ring_time[k - 1] = ring_time[k]
                    ring_src[k - 1] = ring_src[k]
                count -= 1
            ring_inst[count] = instance[i]
            ring_time[count] = send_time[i]
            ring_src[count] = source[i]
            count += 1
        else:
            keep = 0
            for k in range(count):
                if ring_time[k] > send_time[i]:
                    wo[ring_inst[k]] = True
                    same[ring_inst[k]] = ring_src[k] == source[i]
                else:
                    ring_inst[keep] = ring_inst[k]
                    ring_time[keep] = ring_time[k]
                    ring_src[keep] = ring_src[k]
                    keep += 1
            count = keep
    return wo, same


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
