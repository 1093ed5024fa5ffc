"""One-pass steps of building the backward replay's inputs (``patterns.backward``) where NumPy needs sorts.

* :func:`point_cuts`: per message and per collective row, the cut of its synchronisation point of each
  kind, in one pass over the ``sync_points`` table instead of two comparisons and a scatter per kind;
* :func:`touch_order`: the touches ordered by location, then by cut from the last to the first (equal
  keys in their given order), as ``np.lexsort((-cut, loc))`` gives it, by two counting sorts;
  :func:`ordered_touches` the same for the handlings' own touches, by one counting sort over the points (they
  are in (location, cut) order), without arrays of the unordered touches;
* :func:`dense_ids`: ``np.unique(x, return_inverse=True)[1]`` for non-negative ids of a bounded range,
  by marking the ids present instead of sorting them;
* :func:`interval_sums`: the computation time per synchronisation interval that POP's ideal-network replay
  starts from (``patterns.pop``), in one pass over ``time_segments`` instead of masks and gathers;
* :func:`profile_sums`: the time maps summed per (call path, location), without a combined key per row;
* :func:`grouped_offsets`: the per-location offsets of the time maps, checking they are grouped;
* :func:`first_per_point`: the synchronisation points in (location, cut) order, each cut once, by indexing
  the sync_points table instead of sorting;
* :func:`max_by_loc`: ``np.maximum.at`` for the number of cut points per location;
* :func:`barrier_points`: the OpenMP barrier points (wait for the latest arrival, who arrived last) in a
  few passes instead of a dozen NumPy operations over 0.9 M rows;
* :func:`claim_points` and :func:`write_points`: every point's row in the packed arrays, and the OpenMP fork
  and barrier points written there straight from the tables (``patterns.backward_points.pack_with_openmp``).

Temporaries as long as the 5.5 M time-map rows of a 10^7-event trace cost more than the passes over them:
fresh memory is faulted in, with transparent huge pages on a busy machine at a high system-time cost.

Slow reference: NumPy's own ``lexsort`` / ``unique`` and a loop per kind (``tests/patterns/
test_backward_build.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

# sync_points kinds (patterns.tables.CUT_KINDS)
SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE = 1, 2, 3, 4, 5
# handlings and touches (patterns.backward_points)
H_P2P, H_COLL, H_OMPBAR, H_IDLE = range(4)
T_WAITER, T_CAUSER, T_MEMBER, T_IDLE = range(4)


@numba.njit(cache=True, nogil=True)
def point_cuts(kind, row, cut, n_messages, n_collectives):
    """``(send, send_complete, recv, recv_request, collective)`` cuts per linked row, -1 where it has no such
    point; a message's completion defaults to its send, its posting to its receive (blocking calls).  A row
    named by two points of one kind gets the later one's cut."""
    out = np.full((4, n_messages), -1, np.int64)
    coll = np.full(n_collectives, -1, np.int64)
    for i in range(kind.shape[0]):
        k, r = kind[i], row[i]
        if r < 0:
            continue
        if SEND <= k <= RECV_REQUEST:
            if r < n_messages:
                out[k - 1, r] = cut[i]
        elif k == COLLECTIVE and r < n_collectives:
            coll[r] = cut[i]
    for r in range(n_messages):
        if out[1, r] < 0:
            out[1, r] = out[0, r]
        if out[3, r] < 0:
            out[3, r] = out[2, r]
    return out[0], out[1], out[2], out[3], coll


@numba.njit(cache=True, nogil=True)
def touch_order(loc, cut, n_loc, first, out):
    """Indices ordering the touches by ``loc`` (0 .. n_loc-1) ascending, then ``cut`` descending, ties in
    index order, the end of a location (int64 max) first: ``(True, out)``.  Two stable counting sorts, by the
    descending cut into ``first``, then by location into ``out`` (both int64 as long as ``loc``, given by the
    caller: NumPy's large arrays are faulted in in huge pages where the system has them, numba's 4 KiB at a
    time).  ``(False, out)`` where a location is out of range, a cut (other than the end) negative, or the
    cuts too large to count (more than 8 per touch and 2^20): the caller sorts."""
    n = loc.shape[0]
    end = np.iinfo(np.int64).max
    top = 0
    for i in range(n):
        if loc[i] < 0 or loc[i] >= n_loc:
            return False, out
        c = cut[i]
        if c != end:
            if c < 0:
                return False, out
            top = max(top, c + 1)
    if top == 0:
        top = 1
    if top > 8 * n + (1 << 20):
        return False, out
    count = np.zeros(top + 2, np.int64)
    for i in range(n):
        c = cut[i]
        count[top - (top if c >= top else (c if c > 0 else 0)) + 1] += 1
    for k in range(top + 1):
        count[k + 1] += count[k]
    for i in range(n):
        c = cut[i]
        k = top - (top if c >= top else (c if c > 0 else 0))
        first[count[k]] = i
        count[k] += 1
    by_loc = np.zeros(n_loc + 1, np.int64)
    for i in range(n):
        by_loc[loc[i] + 1] += 1
    for k in range(n_loc):
        by_loc[k + 1] += by_loc[k]
    for j in range(n):
        i = first[j]
        out[by_loc[loc[i]]] = i
        by_loc[loc[i]] += 1
    return True, out


@numba.njit(cache=True, nogil=True, inline="always")
def _touch(phase, count, tc_kind, tc_h, b, kind, h):
    """Phase 0: count a touch in bucket ``b``; phase 1: write it at the bucket's next place."""
    if phase == 0:
        count[b + 1] += 1
    else:
        tc_kind[count[b]] = kind
        tc_h[count[b]] = h
        count[b] += 1


@numba.njit(cache=True, nogil=True, _nrt=False)
def ordered_touches(h_kind, h_a, h_b, hm_off, hm_sp, sp_loc, sp_off, count, tc_kind, tc_h, tc_off):
    """The touches of the handlings ``h_*`` (``patterns.backward``: per point-to-point pair its waiter's then, after
    all waiters, its causer's point; per group handling its members ``hm_sp``; per idleness its fork point or,
    ``h_a`` -1, the end of location ``h_b``), ordered as ``np.lexsort((-cut, loc))`` orders them: by location, from
    its end back to its first point, touches of one point in that order.  The points are in (location, cut)
    order, so one stable counting sort over buckets per point does it: location ``l``'s end is bucket
    ``sp_off[l] + l``, its point ``p`` bucket ``sp_off[l] + l + sp_off[l + 1] - p``.  Into ``tc_kind`` and
    ``tc_h`` (as long as the touches), ``tc_off`` (per location, ``L + 1``); ``count``: scratch of
    ``len(sp_loc) + L + 1`` (int32 where the touches are fewer than 2^31), all from the caller (no allocation: it
    runs without numba's runtime)."""
    L = sp_off.shape[0] - 1
    nh = h_kind.shape[0]
    for b in range(count.shape[0]):
        count[b] = 0
    for phase in range(2):
        for h in range(nh):
            if h_kind[h] == H_P2P:
                p = h_a[h]
                l = sp_loc[p]
                _touch(phase, count, tc_kind, tc_h, sp_off[l] + l + sp_off[l + 1] - p, T_WAITER, h)
        for h in range(nh):
            if h_kind[h] == H_P2P:
                p = h_b[h]
                l = sp_loc[p]
                _touch(phase, count, tc_kind, tc_h, sp_off[l] + l + sp_off[l + 1] - p, T_CAUSER, h)
        for h in range(nh):
            for q in range(hm_off[h], hm_off[h + 1]):
                p = hm_sp[q]
                l = sp_loc[p]
                _touch(phase, count, tc_kind, tc_h, sp_off[l] + l + sp_off[l + 1] - p, T_MEMBER, h)
        for h in range(nh):
            if h_kind[h] == H_IDLE:
                p = h_a[h]
                l = h_b[h] if p < 0 else sp_loc[p]
                _touch(phase, count, tc_kind, tc_h, sp_off[l] + l + (0 if p < 0 else sp_off[l + 1] - p), T_IDLE, h)
        if phase == 0:
            for b in range(count.shape[0] - 1):
                count[b + 1] += count[b]
            for l in range(L + 1):
                tc_off[l] = count[sp_off[l] + l] if l < L else count[count.shape[0] - 1]


@numba.njit(cache=True, nogil=True)
def dense_ids(x, top):
    """Each value's rank among the distinct values of ``x`` (all in 0 .. top-1)."""
    present = np.zeros(top + 1, np.int64)
    for i in range(x.shape[0]):
        present[x[i] + 1] = 1
    for v in range(top):
        present[v + 1] += present[v]
    out = np.empty(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        out[i] = present[x[i]]
    return out


@numba.njit(cache=True, nogil=True)
def interval_sums(seg_loc, seg_cut, seg_cnode, seg_time, keep, n_cuts, cut_off, n_points, n_loc):
    """The time of the segments whose call path is kept (``keep[cnode]``) summed per interval that ends at a
    cut point (``cut_off[loc] + cut - 1``, the row of that point) and per location after its last point, in
    row order (the additions of ``np.bincount`` with weights)."""
    comp = np.zeros(n_points)
    last = np.zeros(n_loc)
    for r in range(seg_loc.shape[0]):  # an index outside: False (the sums are dropped; the caller's NumPy path
        l, c = seg_loc[r], seg_cut[r]  # says why)
        if not (0 <= l < n_loc and 0 <= seg_cnode[r] < keep.shape[0]):
            return False, comp, last
        if c <= n_cuts[l]:
            g = cut_off[l] + c - 1
            if not 0 <= g < n_points:
                return False, comp, last
            if keep[seg_cnode[r]]:
                comp[g] += seg_time[r]
        elif keep[seg_cnode[r]]:
            last[l] += seg_time[r]
    return True, comp, last


@numba.njit(cache=True, nogil=True)
def profile_sums(cnode, loc, time, out):
    """``out[cnode[r], loc[r]] += time[r]`` in row order (the additions of ``np.bincount`` with weights);
    False, having added nothing, where an index lies outside ``out`` (the caller's NumPy path says why)."""
    for r in range(cnode.shape[0]):
        if not (0 <= cnode[r] < out.shape[0] and 0 <= loc[r] < out.shape[1]):
            return False
    for r in range(cnode.shape[0]):
        out[cnode[r], loc[r]] += time[r]
    return True


@numba.njit(cache=True, nogil=True)
def wait_sums(sp_i, sp_f, out):
    """``out[cnode, loc] += wait`` of every packed point that waits (``patterns.backward``: sp_i columns 0 and
    2, sp_f column 0), in point order (the additions of ``np.bincount`` over those points); False, having
    added nothing, where an index lies outside ``out``."""
    for j in range(sp_i.shape[0]):
        if sp_f[j, 0] > 0 and not (0 <= sp_i[j, 2] < out.shape[0] and 0 <= sp_i[j, 0] < out.shape[1]):
            return False
    for j in range(sp_i.shape[0]):
        if sp_f[j, 0] > 0:
            out[sp_i[j, 2], sp_i[j, 0]] += sp_f[j, 0]
    return True


@numba.njit(cache=True, nogil=True)
def grouped_offsets(loc, n_loc):
    """``(True, offsets)`` of rows grouped by location in ascending order (locations 0 .. n_loc-1), else
    ``(False, _)``: one pass, no temporary as long as the rows.  Only where the location changes is anything
    written (the start of its run): a count per row would be a store and a load of the same counter in every
    iteration, three times as slow over the 5 M time-map rows of 10^7 events."""
    off = np.zeros(n_loc + 1, np.int64)
    if loc.shape[0] and loc[0] < 0:  # below every location (later ones would fall below the first)
        return False, off
    prev = -1
    for r in range(loc.shape[0]):
        l = loc[r]
        if l != prev:
            if l < prev or l < 0 or l >= n_loc:
                return False, off
            for x in range(prev + 1, l + 1):  # the locations without rows before it start where it does
                off[x] = r
            prev = l
    for x in range(prev + 1, n_loc + 1):
        off[x] = loc.shape[0]
    return True, off


@numba.njit(cache=True, nogil=True)
def first_per_point(loc, cut, p_loc, p_cut, cut_off, first):
    """The rows of (``loc``, ``cut``) ordered by their cut point, the first row of each point only (the rows
    of a sort by (loc, cut, row) without the repeats): a point is row ``cut_off[loc] + cut - 1`` of the
    sync_points table (``p_loc``, ``p_cut``).  ``(False, _)`` where some row names no such point.  ``first``:
    -1 per row of the table (int64, the caller's: NumPy's large arrays are faulted in in huge pages), the
    result is its beginning."""
    n_p = p_loc.shape[0]
    n_loc = cut_off.shape[0] - 1
    for i in range(loc.shape[0]):
        l, c = loc[i], cut[i]
        if l < 0 or l >= n_loc or c < 1:
            return False, first
        g = cut_off[l] + c - 1
        if g >= cut_off[l + 1] or p_loc[g] != l or p_cut[g] != c:
            return False, first
        if first[g] < 0:
            first[g] = i
    k = 0
    for g in range(n_p):
        if first[g] >= 0:
            first[k] = first[g]
            k += 1
    return True, first[:k]


@numba.njit(cache=True, nogil=True)
def max_by_loc(loc, value, out):
    """``np.maximum.at(out, loc, value)`` for integers (the number of cut points of each location); False,
    having changed nothing, where a location lies outside ``out``.  One pass: the maximum of a run of rows of
    one location is kept in a register (its rows come together) and stored when the location changes."""
    best = out.copy()  # one per location: out changes only when every row was in range
    cur, top = -1, 0
    for i in range(loc.shape[0]):
        l = loc[i]
        if not 0 <= l < out.shape[0]:
            return False
        if l != cur:
            if cur >= 0 and top > best[cur]:
                best[cur] = top
            cur, top = l, value[i]
        elif value[i] > top:
            top = value[i]
    if cur >= 0 and top > best[cur]:
        best[cur] = top
    out[:] = best
    return True


def barrier_points(kind, row, p_loc, b_inst, b_enter, b_exit, loc_thread, want):
    """The OpenMP barrier points: the sync_points rows ``s`` of kind ``want`` linked to a barrier row, with
    per point its instance as a dense id, its enter time, its wait for the latest arrival (0 unless
    positive), its time in the barrier, and 1 where it is the latest arrival (the lowest thread among equal
    ones).  ``ok`` is False (and the rest empty) where the instance ids are negative or too sparse to mark.

    The six columns are allocated here by NumPy (its large arrays are faulted in in huge pages where the
    system has them; numba's 4 KiB at a time)."""
    n = int(np.count_nonzero((kind == want) & (row >= 0)))
    cols = [np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n),
            np.empty(n, np.int64)]
    return _barrier_points(kind, row, p_loc, b_inst, b_enter, b_exit, loc_thread, want, *cols)


@numba.njit(cache=True, nogil=True)
def _barrier_points(kind, row, p_loc, b_inst, b_enter, b_exit, loc_thread, want, s, dense, enter, wait, total,
                    first):
    """:func:`barrier_points` into the given columns (as long as the points)."""
    n = s.shape[0]
    k = 0
    top = 0
    for i in range(kind.shape[0]):
        if kind[i] == want and row[i] >= 0:
            s[k] = i
            k += 1
            if row[i] >= b_inst.shape[0] or not 0 <= p_loc[i] < loc_thread.shape[0]:
                return False, s, s, np.empty(0), np.empty(0), np.empty(0), s
            v = b_inst[row[i]]
            if v < 0:
                return False, s, s, np.empty(0), np.empty(0), np.empty(0), s
            top = max(top, v + 1)
    if top > 4 * n + (1 << 16):
        return False, s, s, np.empty(0), np.empty(0), np.empty(0), s
    rank = np.zeros(top + 1, np.int64)  # dense ids: ranks of the instances present
    for j in range(n):
        rank[b_inst[row[s[j]]] + 1] = 1
    for v in range(top):
        rank[v + 1] += rank[v]
    n_inst = rank[top]
    latest = np.full(n_inst, -np.inf)
    for j in range(n):
        r = row[s[j]]
        d = rank[b_inst[r]]
        dense[j] = d
        e = b_enter[r]
        enter[j] = e
        if e != e or latest[d] != latest[d]:  # np.maximum: NaN wins
            latest[d] = np.nan
        elif e > latest[d]:
            latest[d] = e
    big = np.iinfo(np.int64).max
    who = np.full(n_inst, big, np.int64)
    for j in range(n):
        d = dense[j]
        if enter[j] == latest[d]:
            th = np.int64(loc_thread[p_loc[s[j]]])
            if th < who[d]:
                who[d] = th
    for j in range(n):
        d = dense[j]
        w = latest[d] - enter[j]
        wait[j] = w if w > 0 else 0.0
        total[j] = b_exit[row[s[j]]] - enter[j]
        first[j] = 1 if np.int64(loc_thread[p_loc[s[j]]]) == who[d] else 0
    return True, s, dense, enter, wait, total, first


@numba.njit(cache=True, nogil=True)
def barrier_groups(role, ref, ref2, want, cp_next):
    """The OpenMP barrier instances of the points of role ``want`` (``ref``: the instance, dense from 0;
    ``ref2`` 1: the latest arrival): per instance its latest arrival's point (-1: none; the last point named
    so) and its number of member points, and the member points of the instances with a latest arrival, by
    instance and then in point order; every other member's critical path continues at its instance's latest
    arrival (``cp_next``, changed in place)."""
    nb = 0
    m = 0
    for j in range(role.shape[0]):
        if role[j] == want:
            if ref[j] < 0:
                raise ValueError("barrier point without an instance")
            nb = max(nb, ref[j] + 1)
            m += 1
    start = np.zeros(nb + 1, np.int64)
    latest = np.full(nb, -1, np.int64)
    for j in range(role.shape[0]):
        if role[j] == want:
            start[ref[j] + 1] += 1
            if ref2[j] == 1:
                latest[ref[j]] = j
    n_m = start[1:].copy()
    for g in range(nb):
        start[g + 1] += start[g]
    by_inst = np.empty(m, np.int64)
    for j in range(role.shape[0]):
        if role[j] == want:
            by_inst[start[ref[j]]] = j
            start[ref[j]] += 1
    k = 0
    for q in range(m):
        p = by_inst[q]
        last = latest[ref[p]]
        if last >= 0:
            by_inst[k] = p
            k += 1
            if p != last:
                cp_next[p] = last
    return latest, n_m, by_inst[:k]



@numba.njit(cache=True, nogil=True)
def claim_points(p_kind, p_row, p_loc, p_cut, cut_off, s_loc, s_cut, claim, fork_kind, use_forks, m_team, n_teams,
                 bar_kind, b_inst, n_threads):
    """Which sync_points row each synchronisation point is, with the OpenMP points taken straight from the table:
    ``claim`` (int64 per sync_points row, -1 from the caller) := the first of the other points ``(s_loc, s_cut)``
    at that row (its index), else -2 for a fork point (``fork_kind``, linked to a team member; only with
    ``use_forks``), -3 for a barrier point (``bar_kind``, linked to a barrier; ``n_threads``: the locations with a
    thread number), else -1: the points in (location,
    cut) order, each cut once, the others first, as :func:`first_per_point` orders them.  Returns ``(True,
    points, 1 + the largest barrier instance id)``, or ``(False, 0, 0)`` where :func:`first_per_point`, the fork points' NumPy formulation or
    :func:`barrier_points` would not take their fast path (the caller then builds the points part by part)."""
    n_p = p_loc.shape[0]
    n_loc = cut_off.shape[0] - 1
    for i in range(s_loc.shape[0]):
        l, c = s_loc[i], s_cut[i]
        if l < 0 or l >= n_loc or c < 1:
            return False, 0, 0
        g = cut_off[l] + c - 1
        if g >= cut_off[l + 1] or p_loc[g] != l or p_cut[g] != c:
            return False, 0, 0
        if claim[g] == -1:
            claim[g] = i
    n_bar = 0
    top = 0
    for g in range(n_p):
        r = p_row[g]
        if r < 0:
            continue
        if p_kind[g] == fork_kind and use_forks:
            if r >= m_team.shape[0] or not 0 <= m_team[r] < n_teams:
                return False, 0, 0
            if claim[g] == -1:
                claim[g] = -2
        elif p_kind[g] == bar_kind:
            if r >= b_inst.shape[0] or b_inst[r] < 0 or not 0 <= p_loc[g] < n_threads:
                return False, 0, 0
            n_bar += 1
            top = max(top, b_inst[r] + 1)
            if claim[g] == -1:
                claim[g] = -3
    if top > 4 * n_bar + (1 << 16):
        return False, 0, 0
    n = 0
    for g in range(n_p):
        if claim[g] != -1:
            n += 1
    return True, n, top


@numba.njit(cache=True, nogil=True)
def write_points(claim, p_kind, p_row, p_loc, p_cut, p_cnode, fork_kind, m_team, m_enter, m_loc, t_fork, t_master,
                 bar_kind, b_inst, top, b_enter, b_exit, loc_thread, sp_i, sp_f, role, ref, ref2, s_dest):
    """The points :func:`claim_points` found (``top``: its instance bound), in their order: the OpenMP ones written
    into the packed arrays (``sp_i`` columns loc, cut, call path, MPI 0, synchronised ranks none; ``sp_f`` wait,
    total, completion, time; ``role``, ``ref``, ``ref2``, as ``patterns.backward_points.openmp_points`` and
    :func:`barrier_points` make them), the place of each other point in ``s_dest`` (the caller writes those).
    Fork points: time the member's ENTER, total its ENTER - the fork (0 unless positive and finite), completion
    its ENTER - the team's first ENTER (likewise), role 7, the team, 1 on its master.  Barrier points: time the
    ENTER, wait the latest ENTER of the instance - its own (0 unless positive), total EXIT - ENTER, role 8, the
    instance as a dense id, 1 for the latest arrival (the lowest thread among equal ones).  Two passes over the
    sync_points rows: the teams' first ENTER and the instances' latest with who arrived then, the points."""
    n_p = claim.shape[0]
    first = np.full(t_fork.shape[0], np.inf)  # the teams' first member ENTER (np.minimum: NaN wins)
    latest = np.full(top, -np.inf)  # by instance id (np.maximum: NaN wins)
    rank = np.zeros(top + 1, np.int64)  # the instances present, then their dense ids
    big = np.iinfo(np.int64).max
    who = np.full(top, big, np.int64)  # the lowest thread entering at the latest ENTER (none where that is NaN)
    for g in range(n_p):
        r = p_row[g]
        if r < 0:
            continue
        if p_kind[g] == fork_kind and claim[g] != -1:
            t = m_team[r]
            e = m_enter[r]
            if e != e or first[t] != first[t]:
                first[t] = np.nan
            elif e < first[t]:
                first[t] = e
        elif p_kind[g] == bar_kind:
            v = b_inst[r]
            rank[v + 1] = 1
            e = b_enter[r]
            if e != e or latest[v] != latest[v]:
                latest[v] = np.nan
                who[v] = big
            elif e >= latest[v]:
                th = np.int64(loc_thread[p_loc[g]])
                if e > latest[v]:
                    latest[v] = e
                    who[v] = th
                elif th < who[v]:
                    who[v] = th
    for v in range(top):
        rank[v + 1] += rank[v]
    k = 0
    for g in range(n_p):
        c = claim[g]
        if c == -1:
            continue
        if c >= 0:
            s_dest[c] = k
            k += 1
            continue
        r = p_row[g]
        sp_i[k, 0] = p_loc[g]
        sp_i[k, 1] = p_cut[g]
        sp_i[k, 2] = p_cnode[g]
        sp_i[k, 3] = 0
        sp_i[k, 4] = 0
        sp_i[k, 5] = -1
        if c == -2:
            t = m_team[r]
            e = m_enter[r]
            x = e - t_fork[t]
            y = e - first[t]
            sp_f[k, 0] = 0.0
            sp_f[k, 1] = x if x > 0 and x < np.inf else 0.0
            sp_f[k, 2] = y if y > 0 and y < np.inf else 0.0
            sp_f[k, 3] = e
            role[k] = 7
            ref[k] = t
            ref2[k] = 1 if m_loc[r] == t_master[t] else 0
        else:
            v = b_inst[r]
            e = b_enter[r]
            w = latest[v] - e
            sp_f[k, 0] = w if w > 0 else 0.0
            sp_f[k, 1] = b_exit[r] - e
            sp_f[k, 2] = 0.0
            sp_f[k, 3] = e
            role[k] = 8
            ref[k] = rank[v]
            ref2[k] = 1 if np.int64(loc_thread[p_loc[g]]) == who[v] else 0
        k += 1
    return k


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
