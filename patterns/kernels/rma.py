"""MPI one-sided epochs (format 2.3) for ``patterns.rma_epochs``: the walk that opens and closes access,
exposure and lock epochs over the ``mpi_rma_ops`` rows, and Scalasca's lock-competition queue.

Slow references: the row-by-row matcher ``tests/patterns/rma_reference.py``, which the results of
``patterns.rma_epochs`` are compared with on random traces.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.event_codes import MPI_RMA_ATOMIC, MPI_RMA_GET, MPI_RMA_PUT, MPI_RMA_SYNC
from tracefmt.jitcache import track_dependencies
from tracefmt.layout import RmaSync

START, COMPLETE, POST, WAIT, TEST = (int(RmaSync.START), int(RmaSync.COMPLETE), int(RmaSync.POST), int(RmaSync.WAIT),
                                     int(RmaSync.TEST))
LOCK, UNLOCK, LOCK_ALL, UNLOCK_ALL = (int(RmaSync.LOCK), int(RmaSync.UNLOCK), int(RmaSync.LOCK_ALL),
                                      int(RmaSync.UNLOCK_ALL))
ALL = -2  # the target of a LOCK_ALL epoch


@numba.njit(cache=True, nogil=True)
def epoch_walk(op, kind, loc, peer, first):
    """Epochs of rows sorted by (window, process, time, location, row); ``first`` marks each (window, process)'s
    first row.  Returns

    * ``acc_start, acc_complete``: per access epoch its START row and its COMPLETE row (-1: never completed);
    * ``exp_post, exp_end``: per exposure epoch its POST row and the WAIT or TEST row that ended it (-1: none);
    * ``lk_lock, lk_unlock``: per lock epoch its LOCK / LOCK_ALL row and UNLOCK / UNLOCK_ALL row (-1: none);
    * ``in_acc, in_lock``: per row, the access / lock epoch a transfer lies in (-1: none, or no transfer).
    """
    n = op.shape[0]
    acc_start = np.empty(n, np.int64)
    acc_complete = np.empty(n, np.int64)
    exp_post = np.empty(n, np.int64)
    exp_end = np.empty(n, np.int64)
    lk_lock = np.empty(n, np.int64)
    lk_unlock = np.empty(n, np.int64)
    in_acc = np.full(n, -1, np.int64)
    in_lock = np.full(n, -1, np.int64)
    open_exp = np.empty(n, np.int64)  # stack of this group's exposure epochs not ended yet
    held_loc = np.empty(n, np.int64)  # this group's open lock epochs: location, target, epoch
    held_target = np.empty(n, np.int64)
    held_epoch = np.empty(n, np.int64)
    na = ne = nl = 0
    n_open = n_held = 0
    acc = -1
    for i in range(n):
        if first[i]:
            acc = -1
            n_open = 0
            n_held = 0
        t = op[i]
        if t == MPI_RMA_PUT or t == MPI_RMA_GET or t == MPI_RMA_ATOMIC:
            in_acc[i] = acc
            for h in range(n_held):
                if held_loc[h] == loc[i] and (held_target[h] == peer[i] or held_target[h] == ALL):
                    in_lock[i] = held_epoch[h]
                    if held_target[h] == peer[i]:
                        break
            continue
        if t != MPI_RMA_SYNC:
            continue
        k = kind[i]
        if k == START:
            acc_start[na] = i
            acc_complete[na] = -1
            acc = na
            na += 1
        elif k == COMPLETE:
            if acc >= 0:
                acc_complete[acc] = i
                acc = -1
        elif k == POST:
            exp_post[ne] = i
            exp_end[ne] = -1
            open_exp[n_open] = ne
            n_open += 1
            ne += 1
        elif k == WAIT or k == TEST:
            if n_open > 0:
                n_open -= 1
                exp_end[open_exp[n_open]] = i
        elif k == LOCK or k == LOCK_ALL:
            target = peer[i] if k == LOCK else ALL
            lk_lock[nl] = i
            lk_unlock[nl] = -1
            # a second LOCK of the same (location, target) replaces the first, as the held map of the reference
            h = 0
            while h < n_held and not (held_loc[h] == loc[i] and held_target[h] == target):
                h += 1
            if h == n_held:
                n_held += 1
            held_loc[h] = loc[i]
            held_target[h] = target
            held_epoch[h] = nl
            nl += 1
        elif k == UNLOCK or k == UNLOCK_ALL:
            target = peer[i] if k == UNLOCK else ALL
            for h in range(n_held):
                if held_loc[h] == loc[i] and held_target[h] == target:
                    lk_unlock[held_epoch[h]] = i
                    n_held -= 1
                    held_loc[h] = held_loc[n_held]
                    held_target[h] = held_target[n_held]
                    held_epoch[h] = held_epoch[n_held]
                    break
    return (acc_start[:na].copy(), acc_complete[:na].copy(), exp_post[:ne].copy(), exp_end[:ne].copy(),
            lk_lock[:nl].copy(), lk_unlock[:nl].copy(), in_acc, in_lock)


@numba.njit(cache=True, nogil=True, inline="always")
def _waited(enter, exit_, handover, release):
    """Seconds a call [enter, exit_) of a waiting epoch spent for a lock released at ``release`` (the holder's
    unlock exit), -1 if the grant did not fall in it.  Scalasca's rule: the release lies inside the call.  Ours
    besides: the call began before the holder entered its unlock (``handover``) and returned inside that unlock,
    since an MPI (MPICH) may hand the lock over before the holder's MPI_Win_unlock returns; then the whole call
    waited."""
    if enter <= release < exit_:
        return release - enter
    if enter <= handover < exit_ <= release:
        return exit_ - enter
    return -1.0


@numba.njit(cache=True, nogil=True)
def lock_queue(first, exclusive, loc, release, lock_row, unlock_row, orig, ops_ptr, ops_row, row_enter, row_exit,
               row_peer, target):
    """Scalasca's lock-competition queue over lock epochs sorted per (window, target) latest unlock first
    (``first`` marks each (window, target)'s first epoch): an exclusive epoch is compared with the next one, a
    shared one (with the shared ones after it) with the next exclusive one; an epoch of another location waited
    in the first of its lock call, its transfers to the target (rows ``ops_row[ops_ptr[o]:ops_ptr[o+1]]`` of its
    epoch ``o = orig[e]``: a LOCK_ALL epoch is one entry per target) and its unlock call that spans the
    reference's release.  Returns (waiting row, seconds, 1 if a transfer, the holder's unlock row)."""
    n = first.shape[0]
    out_row = np.empty(n, np.int64)
    out_val = np.empty(n, np.float64)
    out_comm = np.empty(n, np.int64)
    out_holder = np.empty(n, np.int64)
    m = 0
    sched = np.empty(n, np.int64)
    g0 = 0
    while g0 < n:
        g1 = g0 + 1
        while g1 < n and not first[g1]:
            g1 += 1
        i = g0
        while g1 - i >= 2:
            cur = i
            i += 1
            ns = 0
            sched[ns] = cur
            ns += 1
            ref = -1
            if exclusive[cur]:
                ref = i
            else:
                while i < g1:
                    if exclusive[i]:
                        ref = i
                        break
                    sched[ns] = i
                    ns += 1
                    i += 1
            if ref < 0:
                break
            u = release[ref]
            h = row_enter[unlock_row[ref]]
            for s in range(ns):
                e = sched[s]
                if loc[e] == loc[ref]:
                    continue
                out_holder[m] = unlock_row[ref]
                found = False
                r = lock_row[e]
                w = _waited(row_enter[r], row_exit[r], h, u)
                if w >= 0.0:
                    out_row[m], out_val[m], out_comm[m] = r, w, 0
                    m += 1
                    found = True
                if not found:
                    for j in range(ops_ptr[orig[e]], ops_ptr[orig[e] + 1]):
                        r = ops_row[j]
                        if row_peer[r] == target[e]:
                            w = _waited(row_enter[r], row_exit[r], h, u)
                            if w >= 0.0:
                                out_row[m], out_val[m], out_comm[m] = r, w, 1
                                m += 1
                                found = True
                                break
                if not found:
                    r = unlock_row[e]
                    w = _waited(row_enter[r], row_exit[r], h, u)
                    if w >= 0.0:
                        out_row[m], out_val[m], out_comm[m] = r, w, 0
                        m += 1
        g0 = g1
    return out_row[:m].copy(), out_val[:m].copy(), out_comm[:m].copy(), out_holder[:m].copy()


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
