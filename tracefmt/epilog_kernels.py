"""Numba kernels of the EPILOG reader: one file's raw event records to our event columns.

Two passes run over the bytes of one EPILOG file (merged trace or one rank's
trace of an EPIK archive), from its first event record to the end:

* ``count_rows`` checks the framing, body lengths (for the number of
  counters), location ids and ENTER/EXIT balance, and counts the rows each
  of the file's locations will get and the depth of its region stack (the
  kernels' location numbers are the file's: ``epilog_decode.FileTables``
  maps location ids to them and them to ours);
* ``fill_rows`` checks everything else (region, communicator and call-site
  ids, partner ranks, times, attributes) and writes the rows into the
  columns, each location's rows contiguous at the cursor ``pos[loc]``.
  The columns are the fields of one ``layout.EVENT_DTYPE`` array (the time
  field holding float64 seconds until the caller turns them into ticks), so
  the rows of one event share a cache line wherever its location's rows are.

Ids go through lookup tables given as plain arrays (sorted keys and values,
``lookup``).  The first error stops the pass: ``status`` says which and at
what byte offset, and the caller turns it into one line naming the file.
The counting pass also counts the records of each type in ``hist``, with
the offset of the first one in ``first_at`` (the caller notes what it skips).

Partner ids (``partner_mode``): 0 = global ranks as stored (per-rank traces
before EPILOG 1.8); 1 = communicator-local ranks, translated through the
communicator's rank list; 2 = global location ids (merged traces),
translated to the rank of that location.

``release_orders`` and ``thread_teams`` are the per-location parts of the
lock and OpenMP-team fix-ups (``tracefmt.epilog_columns``).  The slow,
obviously correct counterpart of all of this is the per-record Python reader
in ``tests/helpers/epilog_reference.py``, which the tests compare with
column by column.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .jitcache import track_dependencies
from .layout import ANY, NO_ID, EventType, RecvFlag

# status slots
ST_ERROR, ST_OFFSET, ST_VALUE, ST_VALUE2, ST_METC, ST_EVENTS = 0, 1, 2, 3, 4, 5
ST_UNDEF_COMM_AT, ST_UNDEF_COMM, ST_MISMATCH_AT, ST_MISMATCH_ATTR, ST_MISMATCH_OPEN = 6, 7, 8, 9, 10
N_STATUS = 11

# error codes of count_rows and fill_rows (epilog_decode words them)
OK, TRUNCATED_HEADER, TRUNCATED_BODY, BAD_LENGTH, NO_LOCATION, BAD_LOCATION, BAD_REGION = 0, 1, 2, 3, 4, 5, 6
EMPTY_STACK, BAD_TIME, BAD_COMM, BAD_RANK, BAD_CALLSITE, BAD_ATTR_LENGTH = 7, 8, 9, 10, 11, 12

# how a record type is handled (the ``action`` table, by type code)
A_NONE, A_SKIP, A_ENTER, A_ENTER_CS, A_EXIT, A_OMP_COLLEXIT, A_MPI_COLLEXIT = 0, 1, 2, 3, 4, 5, 6
A_SEND, A_RECV, A_SEND_COMPLETE, A_RECV_REQUEST, A_CANCELLED, A_TESTED = 7, 8, 9, 10, 11, 12
A_FORK, A_JOIN, A_ALOCK, A_RLOCK, A_PAUSE, A_TRACE, A_RESUME, A_ATTR1, A_ATTR4 = 13, 14, 15, 16, 17, 18, 19, 20, 21
A_DEF = 22  # a definition record inside an event file: the global definitions cover it

# communicator slot kinds
COMM_UNKNOWN, COMM_RANKS, COMM_SELF = 0, 1, 2

_E_ENTER, _E_EXIT = int(EventType.ENTER), int(EventType.EXIT)
_E_SEND, _E_RECV = int(EventType.MPI_SEND), int(EventType.MPI_RECV)
_E_SEND_COMPLETE, _E_RECV_REQUEST = int(EventType.MPI_SEND_COMPLETE), int(EventType.MPI_RECV_REQUEST)
_E_CANCELLED, _E_MPI_COLLEXIT = int(EventType.MPI_REQUEST_CANCELLED), int(EventType.MPI_COLLEXIT)
_E_FORK, _E_JOIN, _E_OMP_COLLEXIT = int(EventType.OMP_FORK), int(EventType.OMP_JOIN), int(EventType.OMP_COLLEXIT)
E_ACQUIRE, E_RELEASE = int(EventType.OMP_ACQUIRE_LOCK), int(EventType.OMP_RELEASE_LOCK)
_E_COUNTER = int(EventType.COUNTER)
_ANY_SOURCE, _ANY_TAG = int(RecvFlag.ANY_SOURCE), int(RecvFlag.ANY_TAG)
_NO_ID = NO_ID
_ANY = ANY
#: the largest event time (seconds, corrected) accepted: its nanosecond ticks fit int64
TIME_LIMIT = 4e9
#: ``d`` of a receive whose byte count comes from the matching send later
BYTES_FROM_SEND = np.uint64(0xFFFFFFFFFFFFFFFF)


# Byte and table reads index with unsigned integers: numba adds a negative-index wrap-around to every
# signed index, and with it LLVM no longer merges the byte loads of _u4/_u8 into one (byte-swapping) load.
_1, _2, _3, _4, _5, _6, _7 = (np.uint64(i) for i in range(1, 8))
_8, _16, _24, _32, _40, _48, _56 = (np.uint64(i) for i in (8, 16, 24, 32, 40, 48, 56))


@njit(cache=True, nogil=True)
def _u4(data, p, big):
    i = np.uint64(p)
    b0, b1, b2, b3 = np.uint64(data[i]), np.uint64(data[i + _1]), np.uint64(data[i + _2]), np.uint64(data[i + _3])
    if big:
        return np.int64((b0 << _24) | (b1 << _16) | (b2 << _8) | b3)
    return np.int64((b3 << _24) | (b2 << _16) | (b1 << _8) | b0)


@njit(cache=True, nogil=True)
def _u8(data, p, big):
    # written out: a loop over the 8 bytes is not unrolled inside the big kernel and costs 4x more
    i = np.uint64(p)
    b0, b1, b2, b3 = np.uint64(data[i]), np.uint64(data[i + _1]), np.uint64(data[i + _2]), np.uint64(data[i + _3])
    b4, b5, b6, b7 = np.uint64(data[i + _4]), np.uint64(data[i + _5]), np.uint64(data[i + _6]), \
        np.uint64(data[i + _7])
    if big:
        return (b0 << _56) | (b1 << _48) | (b2 << _40) | (b3 << _32) | (b4 << _24) | (b5 << _16) | (b6 << _8) | b7
    return (b7 << _56) | (b6 << _48) | (b5 << _40) | (b4 << _32) | (b3 << _24) | (b2 << _16) | (b1 << _8) | b0


@njit(cache=True, nogil=True, inline="always")
def _metc_from(length, fixed):
    """The number of counters a first ENTER/EXIT of ``length`` body bytes carries (no METRIC definitions)."""
    rest = length - fixed
    return rest // 8 if rest >= 0 and (rest % 8 == 0 or rest % 8 == 4) else np.int64(0)


@njit(cache=True, nogil=True)
def lookup(keys, vals, x):
    """vals[i] where keys[i] == x (keys sorted), -1 if x is not a key; keys 0..n-1 are looked up directly.

    The kernels test the direct case themselves before they call this: a call per record costs more than
    the rest of the record (and inlined, numba counts references to the two arrays on every record)."""
    n = keys.shape[0]
    if n == 0:
        return np.int64(-1)
    if x < n and keys[x] == x:
        return np.int64(vals[x])
    i = np.searchsorted(keys, x)
    if i < n and keys[i] == x:
        return np.int64(vals[i])
    return np.int64(-1)


@njit(cache=True, nogil=True)
def count_rows(data, start, big, metc_in, action, fixed, has_metrics, loc_keys, loc_vals, default_loc,
               rows, depth_cap, hist, first_at, status):
    """The counting pass over the event records of data[start:]: framing, body lengths (for the number of
    counters), location ids and ENTER/EXIT balance are checked; ``rows`` and ``depth_cap`` get each of
    the file's locations' rows and deepest region stack, ``hist``/``first_at`` each record type's count and
    first offset; ``status[ST_METC]`` the number of counters (inferred when ``metc_in`` < 0)."""
    n = data.shape[0]
    n_lk = loc_keys.shape[0]
    depth = np.zeros(rows.shape[0], np.int64)
    metc = metc_in
    p = start
    while p < n:
        if p + 2 > n:
            status[ST_ERROR], status[ST_OFFSET] = TRUNCATED_HEADER, p
            return
        length = np.int64(data[np.uint64(p)])
        rtype = data[np.uint64(p + 1)]
        body = p + 2
        end = body + length
        if end > n:
            status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE], status[ST_VALUE2] = TRUNCATED_BODY, p, rtype, \
                length
            return
        hist[rtype] += 1
        if first_at[rtype] < 0:
            first_at[rtype] = p
        act = action[rtype]
        if act == A_DEF or act == A_NONE or act == A_SKIP or act == A_ATTR1 or act == A_ATTR4:
            p = end  # attributes are checked by the filling pass
            continue
        # the location and length checks, as fill_rows makes them
        fx = fixed[rtype]
        if metc < 0 and (act == A_ENTER or act == A_EXIT or act == A_OMP_COLLEXIT):
            metc = _metc_from(length, fx)
        m = metc if (has_metrics[rtype] and metc > 0) else 0
        expect = fx + 8 * m
        if length == expect + 4:
            x = _u4(data, body, big)
            loc = loc_vals[np.uint64(x)] if x < n_lk and loc_keys[np.uint64(x)] == x else \
                lookup(loc_keys, loc_vals, x)
            if loc < 0:
                status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = BAD_LOCATION, p, x
                return
        elif length == expect:
            loc = default_loc
            if loc < 0:
                status[ST_ERROR], status[ST_OFFSET] = NO_LOCATION, p
                return
        else:
            status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE], status[ST_VALUE2] = BAD_LENGTH, p, length, expect
            status[ST_METC] = m
            return
        li = np.uint64(loc)
        nrow = 1 + m
        if act == A_ENTER or act == A_ENTER_CS or act == A_PAUSE or act == A_TRACE:
            dep = depth[li] + 1
            depth[li] = dep
            if dep > depth_cap[li]:
                depth_cap[li] = dep
        elif act == A_EXIT or act == A_OMP_COLLEXIT or act == A_MPI_COLLEXIT:
            if depth[li] == 0:
                status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = EMPTY_STACK, p, loc
                return
            depth[li] -= 1
        elif act == A_RESUME:
            if depth[li] > 0:
                depth[li] -= 1
        elif act == A_TESTED:
            nrow = 0
        else:
            nrow = 1
        rows[li] += nrow
        p = end
    status[ST_METC] = metc


@njit(cache=True, nogil=True)
def fill_rows(data, start, big, metc_in, action, fixed, has_metrics,
              loc_keys, loc_vals, default_loc, loc_rank,
              reg_keys, reg_vals, cs_keys, cs_vals, site_keys, site_rids,
              comm_any, comm_keys, comm_vals, slot_kind, slot_cid, slot_ptr, slot_ranks, slot_self, loc_self,
              partner_mode, pausing_rid, tracing_rid, t0, o0, slope, correct,
              stack_at, pos, time, type_, flags, a, b, c, d, e, lock_rows, messages, status):
    """The filling pass, after a count_rows that found no error: checks the rest (region, communicator
    and call-site ids, partner ranks, times, attributes) and writes each location's rows at its cursor
    ``pos[loc]``; ``stack_at`` holds the offsets of each location's region stack in one flat stack.
    ``lock_rows`` gets the rows of the lock records in record order (one per such record counted),
    ``messages`` each location's sends and receives."""
    n = data.shape[0]
    n_loc = loc_rank.shape[0]
    n_lk = loc_keys.shape[0]
    n_rk = reg_keys.shape[0]
    metc = metc_in
    depth = np.zeros(n_loc, np.int64)
    stack = np.zeros(stack_at[n_loc], np.int64)
    # pending attributes per location; slot n_loc holds those written without a location id
    pend = np.zeros(n_loc + 1, np.int64)
    pend_val = np.zeros((n_loc + 1, 5), np.int64)
    n_pend = 0  # slots with attributes pending: without any (most traces) events skip the attribute step
    events = 0
    n_lock = 0
    p = start
    while p < n:  # count_rows has checked the framing
        length = np.int64(data[np.uint64(p)])
        rtype = data[np.uint64(p + 1)]
        body = p + 2
        end = body + length
        act = action[rtype]
        if act == A_DEF:
            p = end
            continue
        if rtype >= 100:
            events += 1
        if act == A_NONE or act == A_SKIP:
            p = end
            continue
        if act == A_ATTR1 or act == A_ATTR4:
            base = 2 if act == A_ATTR1 else 5
            if length == base + 4:
                lk = lookup(loc_keys, loc_vals, _u4(data, body, big))
                if lk < 0:
                    status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = BAD_LOCATION, p, _u4(data, body, big)
                    return
                q = body + 4
            elif length == base:
                lk = n_loc
                q = body
            else:
                status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE], status[ST_VALUE2] = BAD_ATTR_LENGTH, p, \
                    length, base
                return
            atype = np.int64(data[np.uint64(q)])
            val = np.int64(data[np.uint64(q + 1)]) if act == A_ATTR1 else _u4(data, q + 1, big)
            if 1 <= atype <= 4:
                if pend[lk] == 0:
                    n_pend += 1
                pend[lk] |= 1 << (atype - 1)
                pend_val[lk, atype] = val
            p = end
            continue
        # an event record: [location id] time fields (with metc counters where the type has them)
        fx = fixed[rtype]
        if metc < 0 and (act == A_ENTER or act == A_EXIT or act == A_OMP_COLLEXIT):
            metc = _metc_from(length, fx)
        m = metc if (has_metrics[rtype] and metc > 0) else 0
        if length == fx + 8 * m + 4:
            x = _u4(data, body, big)
            loc = loc_vals[np.uint64(x)] if x < n_lk and loc_keys[np.uint64(x)] == x else \
                lookup(loc_keys, loc_vals, x)
            q = body + 4
        else:
            loc = default_loc
            q = body
        li = np.uint64(loc)
        t = np.uint64(_u8(data, q, big)).view(np.float64)
        if correct:
            t = t + o0 + slope * (t - t0)
        if not (-TIME_LIMIT <= t <= TIME_LIMIT):
            status[ST_ERROR], status[ST_OFFSET] = BAD_TIME, p
            return
        q += 8
        # attributes apply to this event: the location's own, else those without a location id
        ab = 0
        src = loc
        if n_pend > 0:
            ab = pend[li]
            if ab == 0:
                ab = pend[n_loc]
                src = n_loc
            if ab != 0:
                pend[src] = 0
                n_pend -= 1
        k = np.uint64(pos[li])
        nrow = 1
        mq = q  # where the counters are
        if act == A_ENTER or act == A_ENTER_CS:
            x = _u4(data, q, big)
            mq = q + 4
            cs = _NO_ID
            if act == A_ENTER_CS:
                cs = lookup(cs_keys, cs_vals, x)
                if cs < 0:
                    status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = BAD_CALLSITE, p, x
                    return
                rid = lookup(site_keys, site_rids, cs)  # the region the call site enters
                if rid < 0:
                    status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = BAD_CALLSITE, p, cs
                    return
            else:
                rid = reg_vals[np.uint64(x)] if x < n_rk and reg_keys[np.uint64(x)] == x else \
                    lookup(reg_keys, reg_vals, x)
                if rid < 0:
                    status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = BAD_REGION, p, x
                    return
            dep = depth[li]
            stack[np.uint64(stack_at[li] + dep)] = rid
            depth[li] = dep + 1
            time[k], type_[k], a[k], b[k], c[k], d[k] = t, _E_ENTER, rid, cs, _NO_ID, _NO_ID
            nrow += m
        elif act == A_EXIT or act == A_OMP_COLLEXIT or act == A_MPI_COLLEXIT:
            dep = depth[li] - 1
            if dep < 0:  # count_rows has checked the balance; kept so that no stack index is negative
                status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = EMPTY_STACK, p, loc
                return
            depth[li] = dep
            rid = stack[np.uint64(stack_at[li] + dep)]
            if (ab & 8) and pend_val[src, 4] != rid and status[ST_MISMATCH_AT] < 0:
                status[ST_MISMATCH_AT], status[ST_MISMATCH_ATTR], status[ST_MISMATCH_OPEN] = p, pend_val[src, 4], rid
            if act == A_MPI_COLLEXIT:
                r = q + 8 * m
                root, cl = _u4(data, r, big), _u4(data, r + 4, big)
                cid, root = _comm_and_partner(cl, root, loc, loc_rank[li], p, comm_any, comm_keys, comm_vals,
                                              slot_kind, slot_cid, slot_ptr, slot_ranks, slot_self, loc_self,
                                              partner_mode, loc_keys, loc_vals, loc_rank, status, True)
                if cid < 0:
                    return
                time[k], type_[k], a[k], b[k], c[k] = t, _E_MPI_COLLEXIT, rid, cid, root
                d[k], e[k] = _u4(data, r + 8, big), _u4(data, r + 12, big)
            else:
                time[k], a[k] = t, rid
                if act == A_OMP_COLLEXIT:
                    type_[k], b[k] = _E_OMP_COLLEXIT, _NO_ID
                else:
                    type_[k] = _E_EXIT
            nrow += m
        elif act == A_PAUSE or act == A_TRACE:
            rid = pausing_rid if act == A_PAUSE else tracing_rid
            stack[np.uint64(stack_at[li] + depth[li])] = rid
            time[k], type_[k], a[k], b[k], c[k], d[k] = t, _E_ENTER, rid, _NO_ID, _NO_ID, _NO_ID
            depth[li] += 1
            nrow += m
        elif act == A_RESUME:
            if depth[li] > 0:
                depth[li] -= 1
                rid = stack[np.uint64(stack_at[li] + depth[li])]
            else:
                rid = tracing_rid
            time[k], type_[k], a[k] = t, _E_EXIT, rid
            nrow += m
        elif act == A_SEND or act == A_RECV:
            pl, cl, tag = _u4(data, q, big), _u4(data, q + 4, big), _u4(data, q + 8, big)
            cid, partner = _comm_and_partner(cl, pl, loc, loc_rank[li], p, comm_any, comm_keys, comm_vals,
                                             slot_kind, slot_cid, slot_ptr, slot_ranks, slot_self, loc_self,
                                             partner_mode, loc_keys, loc_vals, loc_rank, status, False)
            if cid < 0:
                return
            messages[li] += 1
            time[k], a[k], b[k], c[k] = t, partner, cid, tag
            e[k] = pend_val[src, 2] if ab & 2 else 0
            if act == A_SEND:
                type_[k], d[k] = _E_SEND, _u4(data, q + 12, big)
            else:
                type_[k] = _E_RECV
                f = 0
                if ab & 1:
                    if pend_val[src, 1] & 1:
                        f |= _ANY_SOURCE
                    if pend_val[src, 1] & 2:
                        f |= _ANY_TAG
                flags[k] = f
                if ab & 4:
                    d[k] = pend_val[src, 3]
                else:  # separate branches: a mixed int64/uint64 expression would go through float64
                    d[k] = BYTES_FROM_SEND
        elif act == A_SEND_COMPLETE or act == A_RECV_REQUEST or act == A_CANCELLED:
            time[k], e[k] = t, _u4(data, q, big)
            if act == A_SEND_COMPLETE:
                type_[k] = _E_SEND_COMPLETE
            elif act == A_CANCELLED:
                type_[k] = _E_CANCELLED
            else:  # EPIK does not record the posted source and tag of a receive request
                type_[k], a[k], b[k], c[k] = _E_RECV_REQUEST, _ANY, _NO_ID, _ANY
        elif act == A_TESTED:
            nrow = 0  # an unsuccessful test changes nothing in the analysis
        elif act == A_FORK or act == A_JOIN:
            time[k], type_[k], a[k] = t, _E_FORK if act == A_FORK else _E_JOIN, _NO_ID
        elif act == A_ALOCK or act == A_RLOCK:
            # a = the file's lock id, b = the region open around it: epilog_decode turns them into our
            # lock ids (one per process and lock) and kinds
            time[k], type_[k], a[k] = t, E_ACQUIRE if act == A_ALOCK else E_RELEASE, _u4(data, q, big)
            b[k] = stack[np.uint64(stack_at[li] + depth[li] - 1)] if depth[li] > 0 else _NO_ID
            lock_rows[n_lock] = k
            n_lock += 1
        if nrow > 1:
            for i in range(m):
                j = k + np.uint64(1 + i)
                time[j], type_[j], a[j], d[j] = t, _E_COUNTER, i, _u8(data, mq + 8 * i, big)
        pos[li] += nrow
        p = end
    status[ST_METC] = metc
    status[ST_EVENTS] = events


@njit(cache=True, nogil=True)
def _comm_and_partner(cl, x, loc, rank, p, comm_any, comm_keys, comm_vals, slot_kind, slot_cid, slot_ptr,
                      slot_ranks, slot_self, loc_self, partner_mode, loc_keys, loc_vals, loc_rank, status, is_root):
    """(our communicator id, global rank of partner x); communicator -1 after an error (in status).

    Without an id map (``comm_any``) a communicator id that is not defined is taken as it is."""
    slot = lookup(comm_keys, comm_vals, cl)
    if slot >= 0:
        kind = slot_kind[slot]
        cid = slot_cid[slot]
    elif comm_any:
        kind = COMM_UNKNOWN
        cid = cl
    else:
        status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE] = BAD_COMM, p, cl
        return np.int64(-1), np.int64(0)
    if kind == COMM_SELF:  # MPI_COMM_SELF of a merged trace: one communicator per process
        cid = loc_self[loc, slot_self[slot]]
    elif kind == COMM_UNKNOWN and status[ST_UNDEF_COMM_AT] < 0:
        status[ST_UNDEF_COMM_AT], status[ST_UNDEF_COMM] = p, cid
    if is_root and x == _NO_ID:
        return cid, x
    if partner_mode == 2:  # merged: a global location id
        li = lookup(loc_keys, loc_vals, x)
        return cid, (loc_rank[li] if li >= 0 else x)
    if partner_mode == 0 or kind == COMM_UNKNOWN:
        return cid, x
    if kind == COMM_SELF:
        if x != 0:
            status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE], status[ST_VALUE2] = BAD_RANK, p, x, cid
            return np.int64(-1), np.int64(0)
        return cid, rank
    lo, hi = slot_ptr[slot], slot_ptr[slot + 1]
    if x >= hi - lo:
        status[ST_ERROR], status[ST_OFFSET], status[ST_VALUE], status[ST_VALUE2] = BAD_RANK, p, x, cid
        return np.int64(-1), np.int64(0)
    return cid, slot_ranks[lo + x]


@njit(cache=True, nogil=True)
def to_ticks(seconds, ticks, origin, ticks_per_second):
    """Times in seconds to ticks from origin, in place (``ticks`` is the same memory as ``seconds``, as
    uint64): rint((t - origin) * ticks_per_second), as numpy rounds it, at least 0; returns the first k
    whose ticks (before that floor) are earlier than those of k - 1, or -1."""
    back = -1
    prev = np.int64(0)
    for i in range(seconds.shape[0]):
        v = np.int64(np.rint((seconds[i] - origin) * ticks_per_second))
        if i > 0 and v < prev and back < 0:
            back = i
        prev = v
        ticks[i] = np.uint64(v) if v > 0 else np.uint64(0)
    return back


@njit(cache=True, nogil=True)
def messages(type_, a, b, c, d, rank):
    """One location's sends as rows (rank, partner, communicator, tag, bytes), its receives as rows
    (partner, rank, communicator, tag), and the receives' row numbers."""
    ns = nr = 0
    for i in range(type_.shape[0]):
        if type_[i] == _E_SEND:
            ns += 1
        elif type_[i] == _E_RECV:
            nr += 1
    sends = np.empty((ns, 5), np.int64)
    recvs = np.empty((nr, 4), np.int64)
    at = np.empty(nr, np.int64)
    ns = nr = 0
    for i in range(type_.shape[0]):
        if type_[i] == _E_SEND:
            sends[ns, 0], sends[ns, 1], sends[ns, 2], sends[ns, 3] = rank, a[i], b[i], c[i]
            sends[ns, 4] = np.int64(d[i])
            ns += 1
        elif type_[i] == _E_RECV:
            recvs[nr, 0], recvs[nr, 1], recvs[nr, 2], recvs[nr, 3] = a[i], rank, b[i], c[i]
            at[nr] = i
            nr += 1
    return sends, recvs, at


@njit(cache=True, nogil=True)
def release_orders(type_, a, d, n_locks):
    """Releases get the order of the acquisition they end (the latest open one of the same lock on this
    location); returns the index of the first release without an acquisition, or -1."""
    top = np.full(n_locks, -1, np.int64)
    prev = np.full(type_.shape[0], -1, np.int64)
    bad = -1
    for i in range(type_.shape[0]):
        if type_[i] == E_ACQUIRE:
            lk = a[i]
            prev[i] = top[lk]
            top[lk] = i
        elif type_[i] == E_RELEASE:
            lk = a[i]
            j = top[lk]
            if j < 0:
                if bad < 0:
                    bad = i
                d[i] = 0
            else:
                d[i] = d[j]
                top[lk] = prev[j]
    return bad


@njit(cache=True, nogil=True)
def number_forks(type_, a):
    """Team ids of a master thread's FORK (0, 1, ...) and JOIN (the latest FORK's) records, in place."""
    team = np.int64(-1)
    for i in range(type_.shape[0]):
        if type_[i] == _E_FORK:
            team += 1
            a[i] = team
        elif type_[i] == _E_JOIN:
            a[i] = team if team >= 0 else _NO_ID
    return team + 1


@njit(cache=True, nogil=True)
def thread_teams(type_, time, a, b, c, d, parallel_rids, fork_times, thread, entered):
    """One thread's parallel-region ENTERs get the team of the latest FORK at or before them (c) and the
    thread number (d); its OMP_COLLEXITs the innermost team open (b).  ``entered[team]`` is set for every
    team the thread joined; returns the time of the first ENTER before any FORK, or NaN."""
    stack = np.empty(type_.shape[0] + 1, np.int64)
    depth = 0
    early = np.nan
    for i in range(type_.shape[0]):
        ty = type_[i]
        if ty == _E_ENTER:
            j = np.searchsorted(parallel_rids, a[i])
            if j < parallel_rids.shape[0] and parallel_rids[j] == a[i]:
                k = np.searchsorted(fork_times, time[i], side="right") - 1
                if k < 0:
                    team = np.int64(_NO_ID)
                    if early != early:
                        early = time[i]
                else:
                    team = k
                    entered[k] = True
                c[i], d[i] = team, thread
                stack[depth] = team
                depth += 1
        elif ty == _E_EXIT or ty == _E_OMP_COLLEXIT:
            if ty == _E_OMP_COLLEXIT:
                b[i] = stack[depth - 1] if depth > 0 else _NO_ID
            j = np.searchsorted(parallel_rids, a[i])
            if j < parallel_rids.shape[0] and parallel_rids[j] == a[i] and depth > 0:
                depth -= 1
    return early


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
