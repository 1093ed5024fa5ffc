"""The run on an ideal network: a forward replay of the synchronisation structure in which every MPI call
costs nothing but the waiting its dependencies impose (Dimemas' ideal machine: zero latency, infinite
bandwidth), for the POP transfer efficiency (``patterns.pop``).

:func:`ideal_replay` walks every location's cut points (``sync_points``) in order.  Its clock starts at
the location's first event and advances by the computation between consecutive cut points (the
``time_segments`` of call paths that are neither MPI communication or synchronisation nor OpenMP
barriers: their time is what the replay itself re-creates).  At a receive it waits for the matching send's clock (sends never block); at an MPI
collective until every member has arrived (a 1-to-N receiver only for the root, an N-to-1 root for
all, everything else for all); at an OpenMP barrier for the whole team; a worker thread starts a
parallel region at its master's fork.  Everything else (Init, Finalize, posting, completion, join)
costs nothing.  Returns each location's clock at its end.  Slow reference:
``tests/patterns/backward_reference.py`` (``ideal_replay``).
"""

from __future__ import annotations

import numba
import numpy as np

SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)
COLL_ALL, COLL_ONE2N, COLL_N2ONE = 0, 1, 2


@numba.njit(cache=True, nogil=True)
def ideal_replay(cut_off, kind, row, comp, comp_last, start, c_inst, c_type, c_root, c_off, c_loc, c_rows,
                 b_inst, b_off, b_loc, m_team, m_master, t_off, t_loc, n_messages):
    """Final clock per location (see the module docstring).

    Per location ``l`` its cut points are ``cut_off[l]:cut_off[l+1]`` (``kind``, ``row``: the
    ``sync_points`` columns), ``comp[i]`` the computation in the interval that ends at cut point ``i``,
    ``comp_last[l]`` the one after its last.  Collectives: ``c_inst``/``c_root`` per collectives row
    (-1: not part of a complete instance), ``c_type`` per instance, its members' locations and rows
    ``c_loc[c_off[g]:c_off[g+1]]``, ``c_rows``; OpenMP barriers: ``b_inst`` per omp_barriers row and the
    members' locations; forks: ``m_team``/``m_master`` per omp_team_members row, each team's member
    locations ``t_loc[t_off[t]:t_off[t+1]]``.
    """
    L = start.shape[0]
    clock = start.copy()
    ptr = cut_off[:L].copy()
    sent = np.full(n_messages, np.nan)
    msg_wait = np.full(n_messages, -1, np.int64)
    n_ci = c_off.shape[0] - 1
    c_arr = np.zeros(n_ci, np.int64)
    c_leave = np.full(c_rows.shape[0], np.nan)  # by position in c_rows
    c_at = np.full(c_inst.shape[0], np.nan)  # arrival clock by collectives row
    n_bi = b_off.shape[0] - 1
    b_arr = np.zeros(n_bi, np.int64)
    b_max = np.full(n_bi, -np.inf)
    b_done = np.zeros(n_bi, np.bool_)
    b_in = np.zeros(b_inst.shape[0], np.bool_)  # arrived, by omp_barriers row
    counted = np.zeros(kind.shape[0], np.bool_)
    n_t = t_off.shape[0] - 1
    forked = np.full(n_t, np.nan)
    queue = np.empty(L * 4 + 16, np.int64)
    inq = np.zeros(L, np.bool_)
    qn = 0
    for l in range(L):
        queue[qn] = l
        qn += 1
        inq[l] = True
    left = cut_off[L] - cut_off[0]
    while True:
        while qn > 0:
            qn -= 1
            l = queue[qn]
            inq[l] = False
            while ptr[l] < cut_off[l + 1]:
                i = ptr[l]
                k = kind[i]
                r = row[i]
                if not counted[i]:
                    clock[l] += comp[i]
                    counted[i] = True
                if k == SEND and r >= 0:
                    sent[r] = clock[l]
                    w = msg_wait[r]
                    if w >= 0 and not inq[w]:
                        queue[qn] = w
                        qn += 1
                        inq[w] = True
                elif k == RECV and r >= 0:
                    if np.isnan(sent[r]):
                        msg_wait[r] = l
                        break
                    clock[l] = max(clock[l], sent[r])
                elif k == COLLECTIVE and r >= 0 and c_inst[r] >= 0:
                    g = c_inst[r]
                    if np.isnan(c_at[r]):
                        c_at[r] = clock[l]
                        c_arr[g] += 1
                        if c_arr[g] == c_off[g + 1] - c_off[g]:
                            _finish_collective(g, c_type[g], c_off, c_rows, c_root, c_at, c_leave)
                            for q in range(c_off[g], c_off[g + 1]):
                                ml = c_loc[q]
                                if ml != l and not inq[ml]:
                                    queue[qn] = ml
                                    qn += 1
                                    inq[ml] = True
                    if c_arr[g] < c_off[g + 1] - c_off[g]:
                        break
                    for q in range(c_off[g], c_off[g + 1]):
                        if c_rows[q] == r:
                            clock[l] = c_leave[q]
                elif k == OMP_BARRIER and r >= 0 and b_inst[r] >= 0:
                    g = b_inst[r]
                    if not b_in[r]:
                        b_in[r] = True
                        b_arr[g] += 1
                        b_max[g] = max(b_max[g], clock[l])
                        if b_arr[g] == b_off[g + 1] - b_off[g]:
                            b_done[g] = True
                            for q in range(b_off[g], b_off[g + 1]):
                                ml = b_loc[q]
                                if ml != l and not inq[ml]:
                                    queue[qn] = ml
                                    qn += 1
                                    inq[ml] = True
                    if not b_done[g]:
                        break
                    clock[l] = max(clock[l], b_max[g])
                elif k == FORK and r >= 0 and m_team[r] >= 0:
                    t = m_team[r]
                    if m_master[r]:
                        forked[t] = clock[l]
                        for q in range(t_off[t], t_off[t + 1]):
                            ml = t_loc[q]
                            if ml != l and not inq[ml]:
                                queue[qn] = ml
                                qn += 1
                                inq[ml] = True
                    else:
                        if np.isnan(forked[t]):
                            break
                        clock[l] = forked[t]
                ptr[l] += 1
                left -= 1
        if left <= 0:
            break
        # nothing can move although cut points are left: an inconsistent trace; let the first blocked one pass
        for l in range(L):
            if ptr[l] < cut_off[l + 1]:
                i = ptr[l]
                ptr[l] += 1
                left -= 1
                if kind[i] == OMP_BARRIER and row[i] >= 0 and b_inst[row[i]] >= 0:
                    b_done[b_inst[row[i]]] = True
                queue[qn] = l
                qn += 1
                inq[l] = True
                break
    return clock + comp_last


@numba.njit(cache=True, nogil=True)
def _finish_collective(g, typ, c_off, c_rows, c_root, c_at, c_leave):
    """Leave times of every member of a complete collective instance."""
    latest = -np.inf
    root_t = -np.inf
    for q in range(c_off[g], c_off[g + 1]):
        latest = max(latest, c_at[c_rows[q]])
        if c_root[c_rows[q]]:
            root_t = c_at[c_rows[q]]
    for q in range(c_off[g], c_off[g + 1]):
        own = c_at[c_rows[q]]
        if typ == COLL_ONE2N and not c_root[c_rows[q]] and root_t > -np.inf:
            c_leave[q] = max(own, root_t)
        elif typ == COLL_N2ONE and not c_root[c_rows[q]]:
            c_leave[q] = own
        else:
            c_leave[q] = max(own, latest)
