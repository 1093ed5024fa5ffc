"""FIFO message matching in linear passes (instead of sorting by every key).

MPI's non-overtaking rule matches the k-th send on a channel (source rank,
destination rank, communicator, tag) with the k-th receive on it.
``channel_ids`` numbers the channels of all rows densely (a hash table over
the four keys); ``fifo_pairs`` then walks sends and receives, each already
in matching order, and pairs them by their position within the channel.
Slow references: ``analyzer.reference.channel_ids_reference`` and
``analyzer.reference.fifo_pairs_reference``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies


@numba.njit(cache=True, nogil=True)
def channel_ids(src, dst, comm, tag):
    """Dense id of each row's (src, dst, comm, tag), numbered in order of first appearance; and the count."""
    n = src.shape[0]
    cap = 16
    while cap < 2 * n + 2:
        cap *= 2
    mask = cap - 1
    slot_row = np.full(cap, -1, np.int64)  # first row with that key
    slot_id = np.empty(cap, np.int64)
    out = np.empty(n, np.int64)
    n_ids = 0
    for i in range(n):
        h = np.uint64(src[i]) * np.uint64(0x9E3779B97F4A7C15)
        h = (h ^ np.uint64(dst[i])) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ np.uint64(comm[i])) * np.uint64(0x94D049BB133111EB)
        h = (h ^ np.uint64(tag[i])) * np.uint64(0x9E3779B97F4A7C15)
        s = np.int64(h >> np.uint64(32)) & mask
        while True:
            r = slot_row[s]
            if r < 0:
                slot_row[s] = i
                slot_id[s] = n_ids
                out[i] = n_ids
                n_ids += 1
                break
            if src[r] == src[i] and dst[r] == dst[i] and comm[r] == comm[i] and tag[r] == tag[i]:
                out[i] = slot_id[s]
                break
            s = (s + 1) & mask
    return out, n_ids


@numba.njit(cache=True, nogil=True)
def fifo_pairs(send_chan, send_order, recv_chan, recv_order, n_chan):
    """For each receive row, the send row it matches, or -1.

    ``send_order`` / ``recv_order`` list the rows in matching order (sends by
    their SEND event, receives by their posting); the k-th send of a channel
    is paired with the k-th receive of that channel.
    """
    n_sent = np.zeros(n_chan, np.int64)
    for j in range(send_order.shape[0]):
        n_sent[send_chan[send_order[j]]] += 1
    first = np.zeros(n_chan + 1, np.int64)  # sends of channel c, in order: by_chan[first[c]:first[c + 1]]
    for c in range(n_chan):
        first[c + 1] = first[c] + n_sent[c]
    fill = first[:n_chan].copy()
    by_chan = np.empty(send_order.shape[0], np.int64)
    for j in range(send_order.shape[0]):
        row = send_order[j]
        c = send_chan[row]
        by_chan[fill[c]] = row
        fill[c] += 1
    taken = np.zeros(n_chan, np.int64)
    partner = np.full(recv_chan.shape[0], -1, np.int64)
    for j in range(recv_order.shape[0]):
        row = recv_order[j]
        c = recv_chan[row]
        if taken[c] < n_sent[c]:
            partner[row] = by_chan[first[c] + taken[c]]
            taken[c] += 1
    return partner


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
