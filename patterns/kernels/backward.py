"""The backward replay: the critical path and the delay costs, over the arrays of ``patterns.backward``.

Both walk every location's synchronisation points from its end to its start, as Scalasca 2.6's
backward replay does (``src/scout``: CriticalPath.pattern, Delay.MPI/OMP.pattern, DelayOps,
MpiDelayOps, OmpDelayOps).  Time maps (exclusive time per call path between two cut points of
one location) are sparse: sorted call-path ids with their seconds.

* :func:`critical_path` follows the single path from where the last rank leaves MPI_Finalize (or
  the end of the last master thread) backwards: on each location it charges the time since the
  point where the path arrived, down to the point where it leaves (a wait state it can hand to
  the location that caused it, an OpenMP fork, MPI_Init), minus the wait at that point.
* :func:`delay_costs` schedules every wait state the way the replay meets it (``tc_*``: per
  location the points in backward order; a point-to-point causer waits for its waiter's costs, a
  collective or a barrier for all its members) and charges short-term costs (the delay, scaled
  to the wait it causes) and long-term costs (the propagated costs of later wait states) to the
  call paths of the causing location; propagation stores costs on the causer's own earlier
  wait states (``cost[point, kind]``).

Slow reference: ``tests/patterns/backward_reference.py``.
"""

from __future__ import annotations

import numba
import numpy as np

N_KINDS = 8  # patterns.backward.KINDS
OMPBARRIER, OMPIDLE = 6, 7
SR_NONE, SR_ALL, SR_ONE, SR_GROUP, SR_GROUP_SP = range(5)
T_WAITER, T_CAUSER, T_MEMBER, T_IDLE = range(4)
H_P2P, H_COLL, H_OMPBAR, H_IDLE = range(4)


# ----------------------------------------------------------------------------
# time maps
# ----------------------------------------------------------------------------
# fields of the time-map bundle (:func:`timemaps`): the few arrays the hot helpers read, passed instead of the
# whole input bundle (a call that numba does not inline copies every array of its arguments)
SEG_OFF, SEG_CUT, SEG_CNODE, SEG_TIME, SP_OFF, SP_CUT, SP_WAIT, SP_CNODE, SP_TOTAL, SP_COMPL, SP_LOC, SP_MPI = range(12)


@numba.njit(cache=True, nogil=True)
def timemaps(inp):
    return (inp.seg_off, inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_off, inp.sp_cut, inp.sp_wait, inp.sp_cnode,
            inp.sp_total, inp.sp_compl, inp.sp_loc, inp.sp_mpi)


@numba.njit(cache=True, nogil=True)
def new_map(n_cnodes):
    """A time map: ``(values by call path, keys, [count], mark by call path)``, absent keys holding 0.  The
    functions below fill maps in place and never allocate: a handling costs no memory traffic."""
    return (np.zeros(n_cnodes, np.float64), np.empty(n_cnodes + 1, np.int64), np.zeros(1, np.int64),
            np.zeros(n_cnodes, np.int8))


@numba.njit(cache=True, nogil=True)
def clear(m):
    vals, keys, cnt, mark = m
    for j in range(cnt[0]):
        vals[keys[j]] = 0.0
        mark[keys[j]] = 0
    cnt[0] = 0


@numba.njit(cache=True, nogil=True)
def add(m, c, x):
    vals, keys, cnt, mark = m
    if mark[c] == 0:
        mark[c] = 1
        keys[cnt[0]] = c
        cnt[0] += 1
    vals[c] += x


@numba.njit(cache=True, nogil=True)
def runtimes(tm, loc, a, b, m):
    """``m`` := exclusive time per call path of ``loc`` between cut ``a`` and cut ``b`` (intervals a < j <= b)."""
    vals, keys, cnt, mark = m  # unpacked once: helper calls per entry would cost more than the work
    for j in range(cnt[0]):
        vals[keys[j]] = 0.0
        mark[keys[j]] = 0
    n = 0
    lo, hi = tm[SEG_OFF][loc], tm[SEG_OFF][loc + 1]
    cuts, cnodes, times = tm[SEG_CUT], tm[SEG_CNODE], tm[SEG_TIME]
    lo = _after(cuts, lo, hi, a)
    hi = _after(cuts, lo, hi, b)
    for r in range(lo, hi):
        c = cnodes[r]
        if mark[c] == 0:
            mark[c] = 1
            keys[n] = c
            n += 1
        vals[c] += times[r]
    cnt[0] = n


@numba.njit(cache=True, nogil=True)
def _after(a, lo, hi, x):
    """The first index in a[lo:hi] (ascending) holding a value > x."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def waits(tm, loc, a, b, m):
    """``m`` := wait time per call path of the points of ``loc`` strictly between cuts a and b; returns its sum."""
    vals, keys, cnt, mark = m
    for j in range(cnt[0]):
        vals[keys[j]] = 0.0
        mark[keys[j]] = 0
    n = 0
    total = 0.0
    lo, hi = tm[SP_OFF][loc], tm[SP_OFF][loc + 1]
    cuts, wait, cnodes = tm[SP_CUT], tm[SP_WAIT], tm[SP_CNODE]
    for j in range(_after(cuts, lo, hi, a), hi):
        if cuts[j] >= b:
            break
        w = wait[j]
        if w > 0:
            c = cnodes[j]
            if mark[c] == 0:
                mark[c] = 1
                keys[n] = c
                n += 1
            vals[c] += w
            total += w
    cnt[0] = n
    return total


@numba.njit(cache=True, nogil=True)
def diff(a, b, out):
    """Scalasca's CalculateDiff: ``out`` := a - b for the keys of a, kept where positive; returns the sum."""
    vals, keys, cnt, mark = out
    for j in range(cnt[0]):
        vals[keys[j]] = 0.0
        mark[keys[j]] = 0
    av, ak, acnt, _ = a
    bv = b[0]
    n = 0
    total = 0.0
    for j in range(acnt[0]):
        c = ak[j]
        d = av[c] - bv[c]
        if d > 0.0:
            mark[c] = 1
            keys[n] = c
            n += 1
            vals[c] = d
            total += d
    cnt[0] = n
    return total


@numba.njit(cache=True, nogil=True)
def prune(tm, t, w, prev):
    """Scalasca's PruneDelayTimemap, in place on ``t``: without the waits ``w`` and without the previous
    point's call (but its completion time); returns the sum."""
    tv, tk, tcnt, tmark = t
    wv = w[0]
    total = 0.0
    for j in range(tcnt[0]):
        c = tk[j]
        d = tv[c] - wv[c]
        if d > 0.0:
            tv[c] = d
            total += d
        else:
            tv[c] = 0.0
    if prev >= 0:
        cn = tm[SP_CNODE][prev]
        x = tv[cn]
        off = tm[SP_TOTAL][prev] - tm[SP_COMPL][prev]
        if tmark[cn] == 0:
            tmark[cn] = 1
            tk[tcnt[0]] = cn
            tcnt[0] += 1
        tv[cn] = max(x - off, 0.0)
        total -= min(off, x)
    return total


@numba.njit(cache=True, nogil=True)
def _in_group(inp, g, rank, sp_only):
    lo, hi = inp.grp_off[g], inp.grp_off[g + 1]
    j = lo + np.searchsorted(inp.grp_rank[lo:hi], rank)
    if j < hi and inp.grp_rank[j] == rank:
        return (not sp_only) or inp.grp_sp[j] >= 0
    return False


@numba.njit(cache=True, nogil=True)
def synchronises(inp, j, rank):
    """Whether point ``j`` synchronised with ``rank`` (Scalasca's mSynchRanks)."""
    k = inp.sp_sr_kind[j]
    if k == SR_ALL:
        return True
    if k == SR_ONE:
        return inp.sp_sr_arg[j] == rank
    if k == SR_GROUP:
        return _in_group(inp, inp.sp_sr_arg[j], rank, False)
    if k == SR_GROUP_SP:
        return _in_group(inp, inp.sp_sr_arg[j], rank, True)
    return False


@numba.njit(cache=True, nogil=True)
def previous_mpi(inp, j, rank):
    """The last MPI point before ``j`` on its location that synchronised with ``rank``, or -1."""
    lo = inp.sp_off[inp.sp_loc[j]]
    for q in range(j - 1, lo - 1, -1):
        if inp.sp_mpi[q] and synchronises(inp, q, rank):
            return q
    return -1


@numba.njit(cache=True, nogil=True)
def previous_omp(tm, loc, j):
    """The last OpenMP point of ``loc`` before point ``j`` (j = -1: before its end), or -1."""
    lo, hi = tm[SP_OFF][loc], tm[SP_OFF][loc + 1]
    start = hi - 1 if j < 0 else j - 1
    mpi = tm[SP_MPI]
    for q in range(start, lo - 1, -1):
        if not mpi[q]:
            return q
    return -1


@numba.njit(cache=True, nogil=True)
def cut_of(tm, j):
    return tm[SP_CUT][j] if j >= 0 else 0


@numba.njit(cache=True, nogil=True)
def local_map(tm, j, prev, t, w):
    """``t`` := the pruned time map of point j's location from point ``prev`` to ``j``; returns (its sum,
    the sum of the waits in between) (``w``: scratch)."""
    loc = tm[SP_LOC][j]
    a, b = cut_of(tm, prev), tm[SP_CUT][j]
    runtimes(tm, loc, a, b, t)
    wsum = waits(tm, loc, a, b, w)
    return prune(tm, t, w, prev), wsum


# ----------------------------------------------------------------------------
# critical path
# ----------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _charge(inp, sev, loc, a, b, minus_point, m):
    runtimes(timemaps(inp), loc, a, b, m)
    vals, keys, cnt, _ = m
    for q in range(cnt[0]):
        sev[keys[q], loc] += vals[keys[q]]
    if minus_point >= 0:
        cn = inp.sp_cnode[minus_point]
        sev[cn, loc] -= min(inp.sp_wait[minus_point], vals[cn])


@numba.njit(cache=True, nogil=True)
def critical_path(inp, sev):
    """Add the critical path's time per (call path, location) to ``sev`` ([C, L]); returns its length."""
    sc = new_map(inp.n_cnodes)
    if inp.n_locations == 0:
        return 0.0
    loc = inp.cp_start_loc
    if inp.cp_start_sp >= 0:
        end = inp.sp_cut[inp.cp_start_sp]
        i = inp.cp_start_sp - 1
    else:
        end = inp.n_cuts[loc] + 1
        i = inp.sp_off[loc + 1] - 1
    for _ in range(inp.sp_loc.shape[0] + 2):
        moved = False
        while i >= inp.sp_off[loc]:
            if inp.cp_stop[i]:
                _charge(inp, sev, loc, inp.sp_cut[i], end, i, sc)
                return sev.sum()
            nx = inp.cp_next[i]
            if nx >= 0 and nx != i:
                _charge(inp, sev, loc, inp.sp_cut[i], end, i, sc)
                loc = inp.sp_loc[nx]
                end = inp.sp_cut[nx]
                i = nx - 1
                moved = True
                break
            i -= 1
        if not moved:
            _charge(inp, sev, loc, 0, end, -1, sc)
            break
    return sev.sum()
