"""Per-row walks of the OpenMP task properties (patterns/tasks.py): which team instance a point in
time of a thread belongs to, and how long a team still has tasks to start."""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies


@numba.njit(cache=True, nogil=True)
def innermost_team(m_loc, m_enter, m_exit, m_team, q_loc, q_time):
    """The team instance whose parallel region is innermost on location ``q_loc[i]`` at ``q_time[i]``
    (``m_enter <= t <= m_exit``), -1 where none is.

    Member rows (one per thread of a team instance) are sorted by (location, enter, -exit), queries
    by (location, time); a location's parallel regions nest, so one stack per location finds it.
    """
    n_q = q_loc.shape[0]
    out = np.full(n_q, -1, np.int64)
    stack = np.empty(max(m_loc.shape[0], 1), np.int64)
    top = 0
    j = 0
    cur = -1
    for i in range(n_q):
        if q_loc[i] != cur:
            cur = q_loc[i]
            top = 0
            while j < m_loc.shape[0] and m_loc[j] < cur:
                j += 1
        t = q_time[i]
        while j < m_loc.shape[0] and m_loc[j] == cur and m_enter[j] <= t:
            while top > 0 and m_exit[stack[top - 1]] < m_enter[j]:
                top -= 1  # closed before this one opened
            stack[top] = j
            top += 1
            j += 1
        while top > 0 and m_exit[stack[top - 1]] < t:
            top -= 1
        if top > 0:
            out[i] = m_team[stack[top - 1]]
    return out


@numba.njit(cache=True, nogil=True)
def pending_until(k_team, k_create, k_start, q_team, q_time):
    """For each query: the latest start time of the tasks of team ``q_team[i]`` created before
    ``q_time[i]``, -inf if there is none: until then the team has a task that was not started yet.

    Tasks are sorted by (team, create), queries by (team, time); tasks never started (NaN) are skipped.
    """
    n_q = q_team.shape[0]
    out = np.full(n_q, -np.inf)
    j = 0
    cur = -1
    best = -np.inf
    for i in range(n_q):
        if q_team[i] != cur:
            cur = q_team[i]
            best = -np.inf
            while j < k_team.shape[0] and k_team[j] < cur:
                j += 1
        while j < k_team.shape[0] and k_team[j] == cur and k_create[j] < q_time[i]:
            if k_start[j] > best:  # False for NaN
                best = k_start[j]
            j += 1
        out[i] = best
    return out


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
