"""Numba kernels of the native OTF2 reader: one location's event file to our event columns.

``decode_location`` walks the raw chunks of a ``.evt`` file once: chunk
headers, timestamps, attribute lists (skipped), and every event record, which
it either translates into one row of our event columns (``layout.EventType``)
or counts by type.  Ids go through the location's mapping tables and our
region / communicator tables, given as plain arrays; times get OTF2's
clock-offset correction.  ``resolve_thread_teams`` is the per-thread part of
the team fix-up (``foreign.EventRows.resolve_teams``) on those columns.

Both have a slow, obviously correct counterpart: the ``otf2``-package reader
(``tracefmt.otf2_in``), which the tests compare against column by column.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .jitcache import track_dependencies

from .layout import NO_ID, ANY, EventType
from .otf2_buffer_kernels import COMM_RANKS, COMM_SELF, COMM_UNKNOWN  # noqa: F401
from .otf2_buffer_kernels import comp as _comp, full64 as _full64
from .sorted_lookup import search as _search
from .otf2_rma_kernels import RMA_FIRST, RMA_LAST, S_LOCK_ROW, rma_record

# kernel status codes (the caller turns them into one-line problems or errors)
OK, TRUNCATED, BAD_CHUNK, BAD_RECORD, FULL, BAD_RANK, BAD_REGION, TOO_DEEP, BAD_CONTEXT = 0, 1, 2, 3, 4, 5, 6, 7, 8
# problem kinds reported per event
PROBLEM_UNPOSTED_IRECV, PROBLEM_NOT_MPI_COMM = 1, 2
# region flag bits (by our region id)
REGION_PARALLEL, REGION_OMP_BARRIER, REGION_CRITICAL = 1, 2, 4

# OTF2 event record types (otf2_events_int.h)
ENTER, LEAVE, MPI_SEND, MPI_ISEND, MPI_ISEND_COMPLETE, MPI_IRECV_REQUEST, MPI_RECV, MPI_IRECV = range(12, 20)
MPI_REQUEST_TEST, MPI_REQUEST_CANCELLED, MPI_COLLECTIVE_BEGIN, MPI_COLLECTIVE_END = range(20, 24)
OMP_FORK, OMP_JOIN, OMP_ACQUIRE_LOCK, OMP_RELEASE_LOCK = range(24, 28)
OMP_TASK_CREATE, OMP_TASK_SWITCH, OMP_TASK_COMPLETE = range(28, 31)
THREAD_FORK, THREAD_JOIN, THREAD_TEAM_BEGIN, THREAD_TEAM_END, THREAD_ACQUIRE_LOCK, THREAD_RELEASE_LOCK = range(53, 59)
THREAD_CREATE, THREAD_BEGIN, THREAD_WAIT, THREAD_END = range(62, 66)
CALLING_CONTEXT_ENTER, CALLING_CONTEXT_LEAVE, CALLING_CONTEXT_SAMPLE = range(66, 69)
PROGRAM_BEGIN, PROGRAM_END = 83, 84

_E_ENTER, _E_EXIT, _E_SEND, _E_RECV = int(EventType.ENTER), int(EventType.EXIT), int(EventType.MPI_SEND), int(
    EventType.MPI_RECV)
_E_SEND_COMPLETE, _E_RECV_REQUEST = int(EventType.MPI_SEND_COMPLETE), int(EventType.MPI_RECV_REQUEST)
_E_CANCELLED, _E_MPI_COLLEXIT = int(EventType.MPI_REQUEST_CANCELLED), int(EventType.MPI_COLLEXIT)
_E_FORK, _E_JOIN, _E_OMP_COLLEXIT = int(EventType.OMP_FORK), int(EventType.OMP_JOIN), int(EventType.OMP_COLLEXIT)
_E_ACQUIRE, _E_RELEASE = int(EventType.OMP_ACQUIRE_LOCK), int(EventType.OMP_RELEASE_LOCK)
_NO_ID, _ANY = np.uint32(NO_ID), np.uint32(ANY)
_U32_ALL = np.uint64(0xFFFFFFFF)
_NO_ID64 = np.uint64(NO_ID)
_SPARE_REQUEST = np.uint64(1 << 63)

#: the records that carry no length byte (OTF2 1.1's "singletons": type byte + one compressed value)
SINGLETONS = (ENTER, LEAVE, MPI_ISEND_COMPLETE, MPI_IRECV_REQUEST, MPI_REQUEST_TEST, MPI_REQUEST_CANCELLED,
              OMP_FORK, OMP_TASK_CREATE, OMP_TASK_SWITCH, OMP_TASK_COMPLETE)
_SINGLETON = np.zeros(256, np.bool_)
_SINGLETON[list(SINGLETONS)] = True


# slots of the decoder's state array (what the out-of-line handlers change)
S_NPROB, S_NLOCK, S_NREQ, S_SPARE, S_VALUE = range(5)


@njit(cache=True, nogil=True)
def _problem(probs, st, kind, t, value):
    k = st[S_NPROB]
    if k < probs.shape[0]:
        probs[k, 0], probs[k, 1], probs[k, 2] = kind, np.int64(t), value
    st[S_NPROB] = k + 1


@njit(cache=True, nogil=True)
def _post(reqs, st, otf2_id):
    """Our request id for a posted request (OTF2's, except that 0, our 'blocking', gets a spare one)."""
    ours = otf2_id
    if ours == 0:
        st[S_SPARE] += 1
        ours = _SPARE_REQUEST + np.uint64(st[S_SPARE])
    k = st[S_NREQ]
    for i in range(k):  # a re-used id replaces the old entry, as a dict would
        if reqs[i, 0] == otf2_id:
            reqs[i, 1] = ours
            return ours
    if k < reqs.shape[0]:
        reqs[k, 0], reqs[k, 1] = otf2_id, ours
        st[S_NREQ] = k + 1
    return ours


@njit(cache=True, nogil=True)
def _complete(reqs, st, otf2_id):
    """Our id of a posted request, which is no longer live afterwards; 0 when it was never posted."""
    k = st[S_NREQ]
    for i in range(k - 1, -1, -1):
        if reqs[i, 0] == otf2_id:
            ours = reqs[i, 1]
            reqs[i, 0], reqs[i, 1] = reqs[k - 1, 0], reqs[k - 1, 1]
            st[S_NREQ] = k - 1
            return ours
    return np.uint64(0)


@njit(cache=True, nogil=True)
def decode_location(buf, chunk_size, reg_dense, reg_keys, reg_vals, region_flags,
                    comm_dense, comm_keys, comm_vals, comm_cid, comm_kind, comm_off, comm_size, comm_ranks,
                    cc_dense, cc_keys, cc_vals, cc_region, cc_parent, cc_depth,
                    win_dense, win_keys, win_vals, win_comm, win_id, grp_dense, grp_keys, grp_vals, region_rma,
                    team_pos, rank, tid, begin, end, offset, slope,
                    tm, typ, flags, a, b, c, d, e, counts, probs, locks, reqs, stack, ccstack, path, st):
    """Decode one location's event file `buf` into rows 0..n-1 of the output columns.

    Tables: region local id -> our region id (``reg_*``, -1 undefined) and its
    flag bits; communicator local id -> index j of the location's comm table
    (``comm_*``): our comm id for this rank, kind, the slice of ``comm_ranks``
    holding its global ranks, and ``team_pos[j]``, the location's position in
    a thread team (the thread id where it is none).  Calling contexts: local
    id -> index i (``cc_*``), its region (our id), parent index (-1 at the
    root) and depth (nodes from the root to it, itself included).
    ``begin..slope``: clock intervals.  ``tm`` receives the corrected OTF2 times (the ticks column of
    ``column_memory.new_columns``); ``flags`` are zeroed.

    Scratch and results: ``counts[type]`` counts every record by OTF2 type;
    ``probs`` (kind, time, value) rows of event problems, ``locks`` (id, first
    time, stack-top region) rows of the locks seen, ``reqs`` the live
    requests, ``stack`` the open regions, ``ccstack`` the current calling
    context (indices from the root down) and ``path`` the new one while a
    calling-context event is turned into region visits (both at least the
    deepest context long); one-sided records: window local id -> index k (``win_*``), its communicator's
    index (``win_comm``, -1 unknown) and our window id (``win_id``), group local id -> index of the
    archive's groups (``grp_*``), and the RMA bits of each region (``region_rma``; see
    ``otf2_rma_kernels``); ``st`` the state slots S_* and S_LOCK_ROW (problem,
    lock and request counts grow past the arrays' rows: the rest is counted).
    Returns (rows, status, byte offset of the damage or the end).
    """
    size = buf.shape[0]
    cap = tm.shape[0]
    n = 0
    t_raw = np.uint64(0)
    k_iv = 0
    nlock = 0
    n_iv = begin.shape[0]
    correct = n_iv > 0
    depth = 0
    team = np.int64(-1)
    coll_open = False
    coll_comm = np.int64(-1)
    coll_root = coll_sent = coll_recv = np.uint64(0)
    # a calling-context event becomes EXIT rows down to the frame both contexts share, then ENTER rows: one
    # row per pass of the record loop, through the Enter/Leave code (cc_pending while rows are left)
    cc_pending = False
    ccdepth = cc_keep = cc_len = 0
    rid = np.int64(-1)
    st[S_LOCK_ROW] = -1
    start = 0
    while True:
        if start + 18 > size:
            return n, (BAD_CHUNK if start < size else TRUNCATED), start
        if buf[start] != 3 or (buf[start + 1] != 0x42 and buf[start + 1] != 0x23):
            return n, BAD_CHUNK, start
        big = buf[start + 1] == 0x23
        p = start + 18
        cend = min(size, start + chunk_size)
        while True:
            synth = False
            if cc_pending:
                if ccdepth > cc_keep:  # leave the innermost frame of the previous context
                    ccdepth -= 1
                    rt = LEAVE
                    rid = cc_region[ccstack[ccdepth]]
                    synth = True
                elif ccdepth < cc_len:  # enter the next frame of the new one
                    node = path[ccdepth]
                    ccstack[ccdepth] = node
                    ccdepth += 1
                    cc_keep = ccdepth  # (the exits are done)
                    rt = ENTER
                    rid = cc_region[node]
                    synth = True
                else:
                    cc_pending = False
            if not synth:
                if p >= cend:
                    return n, TRUNCATED, p
                rt = buf[p]
                if rt == 5:  # timestamp
                    if p + 9 > cend:
                        return n, BAD_RECORD, p
                    t_raw = _full64(buf, p + 1, big)
                    p += 9
                    continue
                if rt == 0:  # end of chunk
                    break
                if rt == 2:  # end of file
                    return n, OK, p
                at = p
                p += 1
                val = np.uint64(0)
                if _SINGLETON[rt]:
                    val, q = _comp(buf, p, cend, big, 8)
                    if q < 0:
                        return n, BAD_RECORD, at
                    rec_end = q
                else:
                    if p >= cend:
                        return n, BAD_RECORD, at
                    ln = np.int64(buf[p])
                    p += 1
                    if ln == 0xFF:
                        if p + 8 > cend:
                            return n, BAD_RECORD, at
                        full = _full64(buf, p, big)
                        p += 8
                        if full > np.uint64(cend - p):
                            return n, BAD_RECORD, at
                        ln = np.int64(full)
                    if ln > cend - p:
                        return n, BAD_RECORD, at
                    rec_end = p + ln
                if rt == 6:  # an attribute list before the next event: not used
                    p = rec_end
                    continue
                counts[rt] += 1
                t = t_raw
                if correct:  # OTF2's clock correction, written out here (calls with array arguments cost here)
                    while k_iv + 1 < n_iv and t_raw > end[k_iv]:
                        k_iv += 1
                    bt = begin[k_iv]
                    diff = np.float64(t_raw - bt) if t_raw >= bt else -np.float64(bt - t_raw)
                    t = t_raw + np.uint64(offset[k_iv] + np.int64(np.rint(slope[k_iv] * diff)))
                if rt == CALLING_CONTEXT_ENTER or rt == CALLING_CONTEXT_LEAVE or rt == CALLING_CONTEXT_SAMPLE:
                    ccref, q = _comp(buf, p, rec_end, big, 4)
                    unwind = np.uint64(1)  # a Leave's unwind distance is 1 by definition
                    if rt != CALLING_CONTEXT_LEAVE:
                        unwind, q = _comp(buf, q, rec_end, big, 4)
                    if q < 0:
                        return n, BAD_RECORD, at
                    if cc_keys.shape[0] == 0:
                        ccx = cc_dense[np.int64(ccref)] if np.int64(ccref) < cc_dense.shape[0] else np.int64(-1)
                    else:
                        ccx = _search(ccref, cc_keys, cc_vals)
                    if ccx < 0:
                        st[S_VALUE] = np.int64(ccref)
                        return n, BAD_CONTEXT, at
                    p = rec_end
                    if unwind == 0:  # nothing was left, entered or made progress
                        continue
                    plen = cc_depth[ccx]
                    j = ccx
                    for i in range(plen - 1, -1, -1):
                        path[i] = j
                        j = cc_parent[j]
                    # the first unwind - 1 nodes from the event's one are new, the next one is in both contexts
                    u = np.int64(unwind) if unwind < np.uint64(plen + 1) else plen + 1
                    keep = plen - u + 1
                    cc_len = plen
                    if rt == CALLING_CONTEXT_ENTER:
                        keep = min(keep, plen - 1)  # the entered node is new whatever the distance says
                    elif rt == CALLING_CONTEXT_LEAVE:
                        keep = cc_len = plen - 1  # the node itself is left; its parent is the context now
                    keep = min(keep, ccdepth)
                    k = 0
                    while k < keep and ccstack[k] == path[k]:  # (a damaged distance cannot keep other frames)
                        k += 1
                    cc_keep = k
                    cc_pending = True
                    continue
            if n >= cap:
                return n, FULL, at
            emit = -1
            peer = np.uint64(0)
            j = np.int64(-1)
            if rt == ENTER or rt == LEAVE:
                if synth:
                    rec_end = p
                    if rid < 0:
                        st[S_VALUE] = -1
                        return n, BAD_REGION, at
                else:
                    x = val & _U32_ALL
                    if reg_keys.shape[0] == 0:  # _lookup, written out
                        rid = reg_dense[np.int64(x)] if np.int64(x) < reg_dense.shape[0] else np.int64(-1)
                    else:
                        rid = _search(x, reg_keys, reg_vals)
                    if rid < 0:
                        st[S_VALUE] = np.int64(val & _U32_ALL)
                        return n, BAD_REGION, at
                if rt == ENTER:
                    if depth == stack.shape[0]:
                        return n, TOO_DEEP, at
                    st[S_LOCK_ROW] = -1  # (one LOCK row per call: otf2_rma_kernels)
                    stack[depth] = rid
                    depth += 1
                    a[n], b[n], c[n], d[n], e[n] = rid, _NO_ID, _NO_ID, NO_ID, 0
                    if region_flags[rid] & REGION_PARALLEL and team >= 0:
                        d[n] = np.uint64(team)
                    emit = _E_ENTER
                else:
                    if depth > 0:
                        depth -= 1
                    if coll_open:
                        coll_open = False
                        a[n], d[n], e[n] = rid, coll_sent, coll_recv
                        peer, j = coll_root, coll_comm
                        emit = _E_MPI_COLLEXIT
                    elif region_flags[rid] & REGION_OMP_BARRIER:
                        a[n], b[n], c[n], d[n], e[n] = rid, _NO_ID, 0, 0, 0
                        emit = _E_OMP_COLLEXIT
                    else:
                        a[n], b[n], c[n], d[n], e[n] = rid, 0, 0, 0, 0
                        emit = _E_EXIT
            elif rt == MPI_SEND or rt == MPI_ISEND or rt == MPI_RECV or rt == MPI_IRECV:
                peer, q = _comp(buf, p, rec_end, big, 4)
                cref, q = _comp(buf, q, rec_end, big, 4)
                tag, q = _comp(buf, q, rec_end, big, 4)
                length, q = _comp(buf, q, rec_end, big, 8)
                req = np.uint64(0)
                if rt == MPI_ISEND or rt == MPI_IRECV:
                    req, q = _comp(buf, q, rec_end, big, 8)
                if q < 0:
                    return n, BAD_RECORD, at
                if rt == MPI_ISEND:
                    req = _post(reqs, st, req)
                elif rt == MPI_IRECV:
                    ours = _complete(reqs, st, req)
                    if ours == 0:
                        _problem(probs, st, PROBLEM_UNPOSTED_IRECV, t, np.int64(req))
                    req = ours
                if comm_keys.shape[0] == 0:  # _lookup, written out
                    j = comm_dense[np.int64(cref)] if np.int64(cref) < comm_dense.shape[0] else np.int64(-1)
                else:
                    j = _search(cref, comm_keys, comm_vals)
                c[n], d[n], e[n] = np.uint32(tag), length, req
                emit = _E_SEND if (rt == MPI_SEND or rt == MPI_ISEND) else _E_RECV
            elif rt == MPI_IRECV_REQUEST:
                a[n], b[n], c[n], d[n], e[n] = _ANY, _NO_ID, _ANY, 0, _post(reqs, st, val)
                emit = _E_RECV_REQUEST
            elif rt == MPI_ISEND_COMPLETE or rt == MPI_REQUEST_CANCELLED:
                a[n], b[n], c[n], d[n], e[n] = 0, 0, 0, 0, _complete(reqs, st, val)
                emit = _E_SEND_COMPLETE if rt == MPI_ISEND_COMPLETE else _E_CANCELLED
            elif rt == MPI_COLLECTIVE_END:
                cref, q = _comp(buf, p + 1, rec_end, big, 4)  # after the collective operation byte
                coll_root, q = _comp(buf, q, rec_end, big, 4)
                coll_sent, q = _comp(buf, q, rec_end, big, 8)
                coll_recv, q = _comp(buf, q, rec_end, big, 8)
                if q < 0:
                    return n, BAD_RECORD, at
                coll_open = True
                if comm_keys.shape[0] == 0:  # _lookup, written out
                    coll_comm = comm_dense[np.int64(cref)] if np.int64(cref) < comm_dense.shape[0] else np.int64(-1)
                else:
                    coll_comm = _search(cref, comm_keys, comm_vals)
            elif rt == OMP_FORK or rt == THREAD_FORK:
                a[n], b[n], c[n], d[n], e[n] = _NO_ID, 0, 0, 0, 0
                emit = _E_FORK
            elif rt == OMP_JOIN or rt == THREAD_JOIN:
                a[n], b[n], c[n], d[n], e[n] = _NO_ID, 0, 0, 0, 0
                emit = _E_JOIN
            elif rt == THREAD_TEAM_BEGIN:
                cref, q = _comp(buf, p, rec_end, big, 4)
                if q < 0:
                    return n, BAD_RECORD, at
                if comm_keys.shape[0] == 0:  # _lookup, written out
                    j = comm_dense[np.int64(cref)] if np.int64(cref) < comm_dense.shape[0] else np.int64(-1)
                else:
                    j = _search(cref, comm_keys, comm_vals)
                team = team_pos[j] if j >= 0 else tid
            elif rt == THREAD_TEAM_END:
                team = -1
            elif (rt == OMP_ACQUIRE_LOCK or rt == OMP_RELEASE_LOCK or rt == THREAD_ACQUIRE_LOCK
                  or rt == THREAD_RELEASE_LOCK):
                q = p + 1 if rt >= THREAD_FORK else p  # Thread*: the model byte first
                lk, q = _comp(buf, q, rec_end, big, 4)
                order, q = _comp(buf, q, rec_end, big, 4)
                if q < 0:
                    return n, BAD_RECORD, at
                known = False
                for i in range(min(nlock, locks.shape[0])):
                    if locks[i, 0] == np.int64(lk):
                        known = True
                        break
                if not known:  # first use: its time and the innermost open region
                    if nlock < locks.shape[0]:
                        locks[nlock, 0], locks[nlock, 1] = np.int64(lk), np.int64(t)
                        locks[nlock, 2] = stack[depth - 1] if depth > 0 else -1
                    nlock += 1
                    st[S_NLOCK] = nlock
                a[n], b[n], c[n], d[n], e[n] = np.uint32(lk), 0, 0, order, 0
                acq = rt == OMP_ACQUIRE_LOCK or rt == THREAD_ACQUIRE_LOCK
                emit = _E_ACQUIRE if acq else _E_RELEASE
            elif RMA_FIRST <= rt <= RMA_LAST:
                top = stack[depth - 1] if depth > 0 else -1
                got = rma_record(buf, p, rec_end, big, rt, region_rma[top] if top >= 0 else 0, t, n, win_dense,
                                 win_keys, win_vals, win_comm, win_id, grp_dense, grp_keys, grp_vals, comm_kind,
                                 comm_off, comm_size, comm_ranks, rank, tm, typ, flags, a, b, c, d, e, st)
                if got < 0:
                    return n, BAD_RECORD, at
                n += got
            if emit == _E_SEND or emit == _E_RECV or emit == _E_MPI_COLLEXIT:
                # the communicator and the global rank of the partner or root (written out: see above)
                cid = _NO_ID if j < 0 else comm_cid[j]
                if peer == _U32_ALL:
                    g = _NO_ID
                elif j < 0 or comm_kind[j] == COMM_UNKNOWN:
                    g = np.uint32(peer)
                    _problem(probs, st, PROBLEM_NOT_MPI_COMM, t, j)
                elif comm_kind[j] == COMM_SELF:
                    g = np.uint32(rank)
                elif peer >= np.uint64(comm_size[j]):
                    st[S_VALUE] = np.int64(peer)
                    return n, BAD_RANK, at
                else:
                    g = comm_ranks[comm_off[j] + np.int64(peer)]
                if emit == _E_MPI_COLLEXIT:
                    b[n], c[n] = cid, g
                else:
                    a[n], b[n] = g, cid
            if emit >= 0:
                tm[n] = t
                typ[n] = emit
                flags[n] = 0
                n += 1
            p = rec_end
        start += chunk_size
        if start >= size:
            return n, TRUNCATED, size


@njit(cache=True, nogil=True)
def number_forks(typ, a):
    """Team ids on a master thread's rows: FORKs 0, 1, ... in order, a JOIN the latest FORK's (NO_ID before
    any).  Returns the FORK rows."""
    n = typ.shape[0]
    nf = 0
    for i in range(n):
        if typ[i] == _E_FORK:
            nf += 1
    rows = np.empty(nf, np.int64)
    k = 0
    open_team = _NO_ID
    for i in range(n):
        if typ[i] == _E_FORK:
            a[i] = k
            open_team = np.uint32(k)
            rows[k] = i
            k += 1
        elif typ[i] == _E_JOIN:
            a[i] = open_team
    return rows


@njit(cache=True, nogil=True)
def resolve_thread_teams(typ, tm, a, b, c, d, region_flags, fork_times, tid, stack, members, words):
    """Team id and thread number on ENTER of parallel regions, team id on OMP_COLLEXIT, for one thread.

    A parallel region entered at time t belongs to the latest FORK of its
    process at or before t (``fork_times``; team id = its index); the thread
    number is the one the ENTER carries, else `tid`.  Each (team, number)
    sets bit `number` of the team's `words` words in ``members``.  Returns
    (time of the first parallel region entered before any FORK or -1, whether
    every thread number fitted into the words).
    """
    n = typ.shape[0]
    depth = 0
    early = np.int64(-1)
    fits = True
    for i in range(n):
        t = typ[i]
        if t == _E_ENTER and region_flags[a[i]] & REGION_PARALLEL:
            k = np.searchsorted(fork_times, tm[i], side="right") - 1
            num = np.int64(tid) if d[i] == _NO_ID64 else np.int64(d[i])
            if k < 0:
                team = np.int64(NO_ID)
                if early < 0:
                    early = np.int64(tm[i])
            else:
                team = np.int64(k)
                w = num >> 6
                if 0 <= w < words:
                    members[team * words + w] |= np.uint64(1) << np.uint64(num & 63)
                else:
                    fits = False
            c[i] = np.uint32(team)
            d[i] = np.uint64(num)
            if depth < stack.shape[0]:  # (parallel regions nest no deeper than the decoder's region stack)
                stack[depth] = team
            depth += 1
        elif t == _E_EXIT or t == _E_OMP_COLLEXIT:
            if t == _E_OMP_COLLEXIT:
                b[i] = np.uint32(stack[depth - 1]) if 0 < depth <= stack.shape[0] else _NO_ID
            if region_flags[a[i]] & REGION_PARALLEL and depth > 0:
                depth -= 1
    return early, fits


@njit(cache=True, nogil=True)
def set_team_sizes(typ, a, c, members, words, default):
    """Team size on a master's FORK and JOIN rows: the thread numbers seen in the team, else `default`."""
    nforks = members.shape[0] // words
    for i in range(typ.shape[0]):
        if typ[i] == _E_FORK or typ[i] == _E_JOIN:
            k = np.int64(a[i])
            count = 0
            if k < nforks:
                for w in range(k * words, (k + 1) * words):
                    x = members[w]
                    while x:
                        x &= x - np.uint64(1)
                        count += 1
            c[i] = np.uint32(count if count > 0 else default)


@njit(cache=True, nogil=True)
def rebase_times(ticks, seconds, origin, ticks_per_second):
    """Ticks from the archive's global offset, in place: max(t - origin, 0) (the difference read as
    signed), and their seconds as our reader computes them (``kernels.decode_records``: the ticks read as
    signed, divided by the rate; bit-identical).  Returns the index k of the first event whose successor is
    earlier, or -1."""
    bad = -1
    prev = np.int64(0)
    for i in range(ticks.shape[0]):
        tick = np.int64(ticks[i] - origin)
        if i > 0 and tick < prev and bad < 0:
            bad = i - 1
        prev = tick
        t = np.uint64(tick) if tick > 0 else np.uint64(0)
        ticks[i] = t
        seconds[i] = np.float64(np.int64(t)) / ticks_per_second
    return bad


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
