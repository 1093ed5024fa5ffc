"""The backward replay: the critical path and the delay costs, over the arrays of ``patterns.backward``.

Both walk every location's synchronisation points from its end to its start, as Scalasca 2.6's
backward replay does (``src/scout``: CriticalPath.pattern, Delay.MPI/OMP.pattern, DelayOps,
MpiDelayOps, OmpDelayOps).  Time maps (exclusive time per call path between two cut points of
one location) are sparse: call-path ids with their seconds.

* :func:`critical_path` follows the single path from where the last rank leaves MPI_Finalize (or
  the end of the last master thread) backwards: on each location it charges the time since the
  point where the path arrived, down to the point where it leaves (a wait state it can hand to
  the location that caused it, an OpenMP fork, MPI_Init), minus the wait at that point.
* ``patterns.kernels.delay.delay_costs`` schedules every wait state the way the replay meets it
  and charges short-term and long-term costs to the call paths of the causing location.

The helpers take a handful of plain arrays each: the points' columns packed in two 2-D arrays
(``sp_i``, ``sp_f`` of ``patterns.backward.BackwardInputs``), the scratch time maps in two more.
Every array an njit function receives costs two atomic reference-count updates per call, and a
delay replay makes millions of calls: with the whole input bundle as an argument that bookkeeping
was most of its time.

Slow reference: ``tests/patterns/backward_reference.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

N_KINDS = 8  # patterns.backward.KINDS
OMPBARRIER, OMPIDLE = 6, 7
SR_NONE, SR_ALL, SR_ONE, SR_GROUP, SR_GROUP_SP = range(5)
T_WAITER, T_CAUSER, T_MEMBER, T_IDLE = range(4)
#: a touch of the replay by shares: the costs stored on an own point go to the share handling its wait state
T_SEND = 4
H_P2P, H_COLL, H_OMPBAR, H_IDLE = range(4)
# columns of sp_i / sp_f and h (patterns.backward.POINT_INT, POINT_FLOAT, HANDLING)
P_LOC, P_CUT, P_CNODE, P_MPI, P_SRK, P_SRA, P_SEG = range(7)
P_WAIT, P_TOTAL, P_COMPL, P_TIME = range(4)
HK, HT, HA, HB, HN = range(5)
# rows of the offsets array ``off`` (:func:`offsets`)
SEG, SP = 0, 1


@numba.njit(cache=True, nogil=True)
def offsets(seg_off, sp_off):
    """Per location the rows of its time-map segments (row SEG) and of its points (row SP)."""
    off = np.empty((2, seg_off.shape[0]), np.int64)
    off[SEG] = seg_off
    off[SP] = sp_off
    return off


# ----------------------------------------------------------------------------
# time maps: map m is row m of ``mv`` (seconds by call path, 0 where absent) and of ``mk`` (its keys in
# columns 0..C-1, a mark per call path in C..2C-1, the number of keys in column 2C).  Filled in place,
# never allocated: a handling costs no memory traffic.
# ----------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def new_maps(n_maps, n_cnodes):
    return np.zeros((n_maps, n_cnodes)), np.zeros((n_maps, 2 * n_cnodes + 1), np.int64)


@numba.njit(cache=True, nogil=True, inline="always")
def clear(mv, mk, m):
    C = mv.shape[1]
    for j in range(mk[m, 2 * C]):
        c = mk[m, j]
        mv[m, c] = 0.0
        mk[m, C + c] = 0
    mk[m, 2 * C] = 0


@numba.njit(cache=True, nogil=True, inline="always")
def after(a, lo, hi, x):
    """The first index in a[lo:hi] (ascending) holding a value > x."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def _after_cut(sp_i, lo, hi, x):
    """The first point in lo:hi (cuts ascending) whose cut is > x."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if sp_i[mid, P_CUT] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def runtimes(off, seg_cut, seg_cnode, seg_time, loc, a, b, mv, mk, m):
    """Map m := exclusive time per call path of ``loc`` between cut ``a`` and cut ``b`` (intervals a < j <= b)."""
    clear(mv, mk, m)
    C = mv.shape[1]
    n = 0
    lo, hi = off[SEG, loc], off[SEG, loc + 1]
    lo = after(seg_cut, lo, hi, a)
    hi = after(seg_cut, lo, hi, b)
    for r in range(lo, hi):
        c = seg_cnode[r]
        if mk[m, C + c] == 0:
            mk[m, C + c] = 1
            mk[m, n] = c
            n += 1
        mv[m, c] += seg_time[r]
    mk[m, 2 * C] = n


@numba.njit(cache=True, nogil=True)
def point_segments(seg_off, seg_cut, sp_off, sp_cut, out):
    """Per point the first time-map segment of its location after its cut (one merge per location), into
    ``out`` (the column of the packed points it goes to: no array of its own)."""
    for loc in range(sp_off.shape[0] - 1):
        r, hi = seg_off[loc], seg_off[loc + 1]
        for j in range(sp_off[loc], sp_off[loc + 1]):
            while r < hi and seg_cut[r] <= sp_cut[j]:
                r += 1
            out[j] = r
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def waits(off, sp_i, sp_f, loc, a, b, mv, mk, m):
    """Map m := wait time per call path of the points of ``loc`` strictly between cuts a and b; returns its sum."""
    clear(mv, mk, m)
    C = mv.shape[1]
    n = 0
    total = 0.0
    lo, hi = off[SP, loc], off[SP, loc + 1]
    for j in range(_after_cut(sp_i, lo, hi, a), hi):
        if sp_i[j, P_CUT] >= b:
            break
        w = sp_f[j, P_WAIT]
        if w > 0:
            c = sp_i[j, P_CNODE]
            if mk[m, C + c] == 0:
                mk[m, C + c] = 1
                mk[m, n] = c
                n += 1
            mv[m, c] += w
            total += w
    mk[m, 2 * C] = n
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def diff(mv, mk, a, b, out):
    """Scalasca's CalculateDiff: map ``out`` := a - b for the keys of a, kept where positive; returns the sum."""
    clear(mv, mk, out)
    C = mv.shape[1]
    n = 0
    total = 0.0
    for j in range(mk[a, 2 * C]):
        c = mk[a, j]
        d = mv[a, c] - mv[b, c]
        if d > 0.0:
            mk[out, C + c] = 1
            mk[out, n] = c
            n += 1
            mv[out, c] = d
            total += d
    mk[out, 2 * C] = n
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def prune(sp_i, sp_f, mv, mk, t, w, prev):
    """Scalasca's PruneDelayTimemap, in place on map ``t``: without the waits of map ``w`` and without the
    previous point's call (but its completion time); returns the sum."""
    C = mv.shape[1]
    total = 0.0
    for j in range(mk[t, 2 * C]):
        c = mk[t, j]
        d = mv[t, c] - mv[w, c]
        if d > 0.0:
            mv[t, c] = d
            total += d
        else:
            mv[t, c] = 0.0
    if prev >= 0:
        cn = sp_i[prev, P_CNODE]
        x = mv[t, cn]
        o = sp_f[prev, P_TOTAL] - sp_f[prev, P_COMPL]
        if mk[t, C + cn] == 0:
            mk[t, C + cn] = 1
            mk[t, mk[t, 2 * C]] = cn
            mk[t, 2 * C] += 1
        mv[t, cn] = max(x - o, 0.0)
        total -= min(o, x)
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def cut_of(sp_i, j):
    return sp_i[j, P_CUT] if j >= 0 else 0


@numba.njit(cache=True, nogil=True, inline="always")
def local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, j, prev, t, w):
    """Map ``t`` := the pruned time map of point j's location from point ``prev`` (-1: its start) to ``j``
    (an earlier point of the same location); returns (its sum, the sum of the waits in between) (map ``w``:
    scratch).  :func:`runtimes` and :func:`waits` for the cuts of the two points, without their searches: the
    segments lie between the points' P_SEG columns, the waits at the points between them."""
    loc = sp_i[j, P_LOC]
    C = mv.shape[1]
    clear(mv, mk, t)
    n = 0
    lo = sp_i[prev, P_SEG] if prev >= 0 else after(seg_cut, off[SEG, loc], off[SEG, loc + 1], 0)
    for r in range(lo, sp_i[j, P_SEG]):
        c = seg_cnode[r]
        if mk[t, C + c] == 0:
            mk[t, C + c] = 1
            mk[t, n] = c
            n += 1
        mv[t, c] += seg_time[r]
    mk[t, 2 * C] = n
    clear(mv, mk, w)
    n = 0
    wsum = 0.0
    lo = prev + 1 if prev >= 0 else _after_cut(sp_i, off[SP, loc], j, 0)
    for q in range(lo, j):
        x = sp_f[q, P_WAIT]
        if x > 0:
            c = sp_i[q, P_CNODE]
            if mk[w, C + c] == 0:
                mk[w, C + c] = 1
                mk[w, n] = c
                n += 1
            mv[w, c] += x
            wsum += x
    mk[w, 2 * C] = n
    return prune(sp_i, sp_f, mv, mk, t, w, prev), wsum


# ----------------------------------------------------------------------------
# synchronisation between points
# ----------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, inline="always")
def _in_group(grp_lo, grp_hi, grp, g, rank, sp_only):
    """Whether ``rank`` is a member of collective instance ``g`` (and, if ``sp_only``, has a point there): its
    members are rows ``grp_lo[g]:grp_hi[g]`` of ``grp``, ranks ascending (instances of one communicator may
    share their rows)."""
    lo, hi = grp_lo[g], grp_hi[g]
    while lo < hi:
        mid = (lo + hi) >> 1
        if grp[mid, 0] < rank:
            lo = mid + 1
        else:
            hi = mid
    if lo < grp_hi[g] and grp[lo, 0] == rank:
        return (not sp_only) or grp[lo, 1] >= 0
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def synchronises(sp_i, grp_lo, grp_hi, grp, j, rank):
    """Whether point ``j`` synchronised with ``rank`` (Scalasca's mSynchRanks)."""
    k = sp_i[j, P_SRK]
    if k == SR_ALL:
        return True
    if k == SR_ONE:
        return sp_i[j, P_SRA] == rank
    if k == SR_GROUP:
        return _in_group(grp_lo, grp_hi, grp, sp_i[j, P_SRA], rank, False)
    if k == SR_GROUP_SP:
        return _in_group(grp_lo, grp_hi, grp, sp_i[j, P_SRA], rank, True)
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def previous_mpi(off, sp_i, grp_lo, grp_hi, grp, j, rank):
    """The last MPI point before ``j`` on its location that synchronised with ``rank``, or -1."""
    lo = off[SP, sp_i[j, P_LOC]]
    for q in range(j - 1, lo - 1, -1):
        if sp_i[q, P_MPI] and synchronises(sp_i, grp_lo, grp_hi, grp, q, rank):
            return q
    return -1


@numba.njit(cache=True, nogil=True, inline="always")
def previous_omp(off, sp_i, loc, j):
    """The last OpenMP point of ``loc`` before point ``j`` (j = -1: before its end), or -1."""
    lo, hi = off[SP, loc], off[SP, loc + 1]
    start = hi - 1 if j < 0 else j - 1
    for q in range(start, lo - 1, -1):
        if not sp_i[q, P_MPI]:
            return q
    return -1


@numba.njit(cache=True, nogil=True)
def interval_maps(seg_off, sp_off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, grp_lo, grp_hi, grp, points, ranks,
                  n_cnodes):
    """Per ``points[k]``: its pruned time map since its last MPI point that synchronised with ``ranks[k]``
    (:func:`local_map`, what a wait state's handling compares the causer's map with), as CSR rows
    ``(offsets, call paths, seconds)``: what a share sends with a ghost point (``analyzer.distributed``)."""
    off = offsets(seg_off, sp_off)
    mv, mk = new_maps(2, n_cnodes)
    C = n_cnodes
    n = points.shape[0]
    out_off = np.zeros(n + 1, np.int64)
    cap = 16 + 4 * n
    out_c = np.empty(cap, np.int64)
    out_v = np.empty(cap)
    k = 0
    for x in range(n):
        j = points[x]
        local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, j,
                  previous_mpi(off, sp_i, grp_lo, grp_hi, grp, j, ranks[x]), 0, 1)
        m = mk[0, 2 * C]
        if k + m > cap:
            cap = 2 * (k + m)
            c2 = np.empty(cap, np.int64)
            v2 = np.empty(cap)
            c2[:k] = out_c[:k]
            v2[:k] = out_v[:k]
            out_c, out_v = c2, v2
        for q in range(m):
            c = mk[0, q]
            out_c[k] = c
            out_v[k] = mv[0, c]
            k += 1
        out_off[x + 1] = k
    return out_off, out_c[:k].copy(), out_v[:k].copy()


# ----------------------------------------------------------------------------
# critical path
# ----------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _charge(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, sev, loc, a, b, minus_point, mv, mk):
    runtimes(off, seg_cut, seg_cnode, seg_time, loc, a, b, mv, mk, 0)
    C = mv.shape[1]
    for q in range(mk[0, 2 * C]):
        c = mk[0, q]
        sev[c, loc] += mv[0, c]
    if minus_point >= 0:
        cn = sp_i[minus_point, P_CNODE]
        sev[cn, loc] -= min(sp_f[minus_point, P_WAIT], mv[0, cn])


@numba.njit(cache=True, nogil=True)
def critical_path(inp, sev):
    """Add the critical path's time per (call path, location) to ``sev`` ([C, L]); returns its length."""
    if inp.n_locations == 0:
        return 0.0
    loc = inp.cp_start_loc
    budget = inp.sp_i.shape[0] + 2  # an inconsistent trace's links may form a cycle: bounded
    if inp.cp_start_sp >= 0:
        walk_path(inp, sev, loc, inp.sp_i[inp.cp_start_sp, P_CUT], inp.cp_start_sp - 1, budget)
    else:
        walk_path(inp, sev, loc, inp.n_cuts[loc] + 1, inp.sp_off[loc + 1] - 1, budget)
    return sev.sum()


@numba.njit(cache=True, nogil=True)
def walk_path(inp, sev, loc, end, i, budget):
    """Walk the critical path backwards on ``loc`` from point ``i`` (the interval up to cut ``end`` on it),
    charging ``sev``, for at most ``budget`` steps (a step: to the next location, or the path's end).  Returns
    ``(link, budget left)``: ``link`` -1 where the path ends (or the budget does), else the remote link it
    leaves by (``cp_next = -2 - link``: a point of another share, see ``analyzer.distributed.share_backward``)."""
    mv, mk = new_maps(1, inp.n_cnodes)
    off = offsets(inp.seg_off, inp.sp_off)
    seg_cut, seg_cnode, seg_time, sp_i, sp_f = inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_i, inp.sp_f
    cp_next, cp_stop = inp.cp_next, inp.cp_stop
    while budget > 0:
        budget -= 1
        moved = False
        while i >= off[SP, loc]:
            if cp_stop[i]:
                _charge(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, sev, loc, sp_i[i, P_CUT], end, i, mv, mk)
                return -1, budget
            nx = cp_next[i]
            if nx <= -2:
                _charge(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, sev, loc, sp_i[i, P_CUT], end, i, mv, mk)
                return -2 - nx, budget
            if nx >= 0 and nx != i:
                _charge(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, sev, loc, sp_i[i, P_CUT], end, i, mv, mk)
                loc = sp_i[nx, P_LOC]
                end = sp_i[nx, P_CUT]
                i = nx - 1
                moved = True
                break
            i -= 1
        if not moved:
            _charge(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, sev, loc, 0, end, -1, mv, mk)
            break
    return -1, budget


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
