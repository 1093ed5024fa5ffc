"""Numba kernel of the native OTF2 reader for one-sided (RMA) records: one record to at most one row of ours.

``decode_location`` (``tracefmt.otf2_kernels``) hands every record of OTF2 types 35-52 (RmaWinCreate ...
RmaOpCompleteRemote) to :func:`rma_record`, which writes our MPI_RMA_PUT / _GET / _ATOMIC / _SYNC row
(format 2.3) or nothing.  Score-P writes them inside the MPI call (``SCOREP_Mpi_Rma.c``), and OTF2 does
not say which synchronisation a RmaGroupSync or RmaSync is: the enclosing region does (``region_rma``,
built from the MPI function names by ``otf2_native``).  Translation:

* RmaCollectiveEnd: CREATE for the handle-creating operations (CREATE_HANDLE, ALLOCATE, both), FREE for
  the destroying ones, FENCE for BARRIER; RmaWinCreate / RmaWinDestroy / RmaCollectiveBegin add nothing.
* RmaGroupSync: POST, START, COMPLETE, WAIT or TEST by the region, the group in ``b`` (as an index of the
  archive's groups, which ``otf2_events`` turns into our group ids); none for sync level NONE (Score-P's
  MPI_Win_test that found the epoch still open).
* RmaRequestLock / RmaAcquireLock: LOCK (LOCK_ALL for the undefined remote), EXCLUSIVE for an exclusive
  lock; one row per region visit: an acquire after a request in the same call moves the row to the acquire's
  time.  RmaTryLock (an unsuccessful attempt) adds nothing.  RmaReleaseLock: UNLOCK (UNLOCK_ALL).
* RmaSync: SYNC in MPI_Win_sync, else FLUSH (LOCAL in the _local forms).
* RmaPut / RmaGet: bytes; NONBLOCKING in the request-based calls.  RmaAtomic: ACCUMULATE, COMPARE_AND_SWAP
  (also TEST_AND_SET), FETCH_AND_OP in MPI_Fetch_and_op (also FETCH_AND_ADD / _INCREMENT and SWAP), else
  GET_ACCUMULATE (FETCH_AND_ACCUMULATE; INCREMENT as ACCUMULATE); bytes sent and received as written.
* The completion records (RmaOpComplete*, RmaOpTest) and RmaWaitChange add nothing.

Remote ranks are ranks of the window's communicator, made global through the communicator table; a window
the definitions do not name makes no row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .jitcache import track_dependencies

from .layout import NO_ID, EventType, RmaAtomic, RmaFlag, RmaSync, RmaSyncFlag
from .otf2_buffer_kernels import COMM_RANKS, COMM_SELF, comp as _comp
from .sorted_lookup import search as _search

# OTF2 event record types (otf2_events_int.h)
RMA_WIN_CREATE, RMA_WIN_DESTROY, RMA_COLLECTIVE_BEGIN, RMA_COLLECTIVE_END, RMA_GROUP_SYNC = range(35, 40)
RMA_REQUEST_LOCK, RMA_ACQUIRE_LOCK, RMA_TRY_LOCK, RMA_RELEASE_LOCK, RMA_SYNC, RMA_WAIT_CHANGE = range(40, 46)
RMA_PUT, RMA_GET, RMA_ATOMIC = 46, 47, 48
RMA_FIRST, RMA_LAST = 35, 52
# OTF2_CollectiveOp of window creation and destruction, OTF2_RmaAtomicType, OTF2_LockType
_BARRIER, _CREATE_HANDLE, _DESTROY_HANDLE, _ALLOCATE, _DEALLOCATE, _CREATE_ALLOC, _DESTROY_DEALLOC = (
    0, 17, 18, 19, 20, 21, 22)
_A_ACCUMULATE, _A_INCREMENT, _A_TEST_AND_SET, _A_CAS, _A_SWAP, _A_FETCH_ADD, _A_FETCH_INC = 0, 1, 2, 3, 4, 5, 6
_LOCK_EXCLUSIVE = 0

#: region_rma bits: the low nibble is the RmaSync kind the call implies (0: none), then these
REGION_RMA_KIND, REGION_RMA_LOCAL, REGION_RMA_NONBLOCKING, REGION_RMA_FETCH_AND_OP = 0x0F, 0x10, 0x20, 0x40
#: state slot (of decode_location's ``st``) holding the row of the current call's LOCK, -1 if none
S_LOCK_ROW = 5

_PUT, _GET, _ATOM, _SYNC = (int(EventType.MPI_RMA_PUT), int(EventType.MPI_RMA_GET), int(EventType.MPI_RMA_ATOMIC),
                            int(EventType.MPI_RMA_SYNC))
_K_CREATE, _K_FREE, _K_FENCE = int(RmaSync.CREATE), int(RmaSync.FREE), int(RmaSync.FENCE)
_K_POST, _K_TEST, _K_LOCK, _K_UNLOCK = int(RmaSync.POST), int(RmaSync.TEST), int(RmaSync.LOCK), int(RmaSync.UNLOCK)
_K_LOCK_ALL, _K_UNLOCK_ALL = int(RmaSync.LOCK_ALL), int(RmaSync.UNLOCK_ALL)
_K_FLUSH, _K_SYNC = int(RmaSync.FLUSH), int(RmaSync.SYNC)
_F_EXCLUSIVE, _F_LOCAL, _F_NONBLOCKING = int(RmaSyncFlag.EXCLUSIVE), int(RmaSyncFlag.LOCAL), int(RmaFlag.NONBLOCKING)
_OP_ACC, _OP_GETACC = int(RmaAtomic.ACCUMULATE), int(RmaAtomic.GET_ACCUMULATE)
_OP_FOP, _OP_CAS = int(RmaAtomic.FETCH_AND_OP), int(RmaAtomic.COMPARE_AND_SWAP)
_NO_ID = np.uint32(NO_ID)
_U32_ALL = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _lookup(x, dense, keys, vals):
    if keys.shape[0] == 0:
        return dense[np.int64(x)] if np.int64(x) < dense.shape[0] else np.int64(-1)
    return _search(x, keys, vals)


@njit(cache=True, nogil=True)
def _global(remote, j, comm_kind, comm_off, comm_size, comm_ranks, rank):
    """The global rank of window rank `remote` of communicator index j; NO_ID where it cannot be told."""
    if remote == _U32_ALL or j < 0:
        return _NO_ID
    if comm_kind[j] == COMM_SELF:
        return np.uint32(rank)
    if comm_kind[j] != COMM_RANKS or remote >= np.uint64(comm_size[j]):
        return _NO_ID
    return comm_ranks[comm_off[j] + np.int64(remote)]


@njit(cache=True, nogil=True)
def rma_record(buf, p, rec_end, big, rt, region_bits, t, n, win_dense, win_keys, win_vals, win_comm, win_id,
               grp_dense, grp_keys, grp_vals, comm_kind, comm_off, comm_size, comm_ranks, rank,
               tm, typ, flags, a, b, c, d, e, st):
    """Row n for the RMA record of type `rt` whose fields are buf[p:rec_end]; `region_bits`: region_rma of
    the innermost open region.  Returns 1 (row n written), 0 (no row) or -1 (a damaged record)."""
    if rt == RMA_WIN_CREATE or rt == RMA_WIN_DESTROY or rt == RMA_COLLECTIVE_BEGIN or rt == RMA_WAIT_CHANGE \
            or rt > RMA_ATOMIC:
        return 0
    q = p
    op = np.uint64(0)
    level = np.uint64(1)
    if rt == RMA_COLLECTIVE_END:
        if q >= rec_end:
            return -1
        op = np.uint64(buf[q])
        level, q = _comp(buf, q + 1, rec_end, big, 4)
    elif rt == RMA_GROUP_SYNC:
        level, q = _comp(buf, q, rec_end, big, 4)
    wref, q = _comp(buf, q, rec_end, big, 4)
    if q < 0:
        return -1
    k = _lookup(wref, win_dense, win_keys, win_vals)
    if k < 0:
        return 0  # (Score-P writes the undefined window where MPI_Win_create failed)
    j = win_comm[k]
    kind = 0
    fl = 0
    bb = _NO_ID
    cc = np.uint32(0)
    dd = ee = np.uint64(0)
    et = _SYNC
    region_kind = region_bits & REGION_RMA_KIND
    if rt == RMA_COLLECTIVE_END:
        if op == _CREATE_HANDLE or op == _ALLOCATE or op == _CREATE_ALLOC:
            kind = _K_CREATE
        elif op == _DESTROY_HANDLE or op == _DEALLOCATE or op == _DESTROY_DEALLOC:
            kind = _K_FREE
        elif op == _BARRIER:
            kind = _K_FENCE
        else:
            return 0
    elif rt == RMA_GROUP_SYNC:
        gref, q = _comp(buf, q, rec_end, big, 4)
        if q < 0:
            return -1
        if level == 0 or region_kind < _K_POST or region_kind > _K_TEST:
            return 0  # (a test that found the epoch open; a group sync outside post ... test)
        kind = region_kind
        g = _lookup(gref, grp_dense, grp_keys, grp_vals)
        bb = np.uint32(g) if g >= 0 else _NO_ID
    else:
        remote, q = _comp(buf, q, rec_end, big, 4)
        if q < 0:
            return -1
        target = _global(remote, j, comm_kind, comm_off, comm_size, comm_ranks, rank)
        if rt == RMA_REQUEST_LOCK or rt == RMA_ACQUIRE_LOCK or rt == RMA_TRY_LOCK:
            _lock_id, q = _comp(buf, q, rec_end, big, 8)
            if q < 0 or q >= rec_end:
                return -1
            if rt == RMA_TRY_LOCK:
                return 0
            row = st[S_LOCK_ROW]
            if row >= 0:  # one LOCK per call: the acquire's time wins over the request's
                if rt == RMA_ACQUIRE_LOCK:
                    tm[row] = t
                return 0
            st[S_LOCK_ROW] = n
            kind = _K_LOCK_ALL if remote == _U32_ALL else _K_LOCK
            fl = _F_EXCLUSIVE if buf[q] == _LOCK_EXCLUSIVE else 0
            bb = target
        elif rt == RMA_RELEASE_LOCK:
            kind = _K_UNLOCK_ALL if remote == _U32_ALL else _K_UNLOCK
            bb = target
        elif rt == RMA_SYNC:
            kind = _K_SYNC if region_kind == _K_SYNC else _K_FLUSH
            fl = _F_LOCAL if region_bits & REGION_RMA_LOCAL else 0
            bb = target if kind == _K_FLUSH else _NO_ID
        else:  # a transfer
            bb = target
            fl = _F_NONBLOCKING if region_bits & REGION_RMA_NONBLOCKING else 0
            if rt == RMA_PUT or rt == RMA_GET:
                dd, q = _comp(buf, q, rec_end, big, 8)
                et = _PUT if rt == RMA_PUT else _GET
            else:
                if q >= rec_end:
                    return -1
                at = buf[q]
                dd, q = _comp(buf, q + 1, rec_end, big, 8)
                ee, q = _comp(buf, q, rec_end, big, 8)
                et = _ATOM
                if at == _A_ACCUMULATE or at == _A_INCREMENT:
                    cc = np.uint32(_OP_ACC)
                elif at == _A_CAS or at == _A_TEST_AND_SET:
                    cc = np.uint32(_OP_CAS)
                elif (region_bits & REGION_RMA_FETCH_AND_OP or at == _A_FETCH_ADD or at == _A_FETCH_INC
                      or at == _A_SWAP):
                    cc = np.uint32(_OP_FOP)
                else:
                    cc = np.uint32(_OP_GETACC)
            if q < 0:
                return -1
    if et == _SYNC:
        cc = np.uint32(kind)
    tm[n] = t
    typ[n] = et
    flags[n] = fl
    a[n] = np.uint32(win_id[k])
    b[n] = bb
    c[n] = cc
    d[n] = dd
    e[n] = ee
    return 1


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
