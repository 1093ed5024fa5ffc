"""Slow reference of ``analyzer.replay.kernels.timeline.cut_timeline``: one location's cut points and
per-interval exclusive times, walked event by event in Python with call paths as region tuples.

``reference_timeline(trace, loc, fork_paths)`` returns ``(cuts, intervals)``: the cut points as
``(kind, event index)`` in order, and ``{interval: {call path tuple: seconds}}``, fork and join spans
moved onto the parallel region.  ``forks[(process, team id)]`` is ``(the master's call path at the
fork of that team, the fork's time)`` (a worker's parallel region continues that path); the
function adds the forks it sees.
"""

from __future__ import annotations

from collections import defaultdict

from tracefmt.layout import NO_ID, EventType as E, Role

SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)
BARRIERS = (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER)


def reference_timeline(trace, loc, forks):
    defs = trace.defs
    d = defs.locations[loc]
    worker = d.thread > 0
    ev = trace.events(loc)
    cuts, intervals = [], defaultdict(lambda: defaultdict(float))
    cur = defaultdict(float)
    stack = []  # (region, path, is a parallel region with a team)
    last = 0.0
    seen = set()

    def cut(kind, i, keep=True):
        if keep:
            for p, v in cur.items():
                intervals[len(cuts) + 1][p] += v
        cur.clear()
        cuts.append((kind, i))

    last_par = None  # (team, path, caller path, time, interval) of the last parallel region left
    for i in range(len(ev)):
        t, typ, a = float(ev.time[i]), int(ev.type[i]), int(ev.a[i])
        if typ == E.ENTER:
            if stack:
                cur[stack[-1][1]] += t - last
            last = t
            role = defs.regions[a].role
            team = role == Role.OMP_PARALLEL and int(ev.c[i]) != NO_ID
            key = (d.process, int(ev.c[i]))
            if team and int(ev.d[i]) not in (0, NO_ID):
                base, fork = forks[key]
            else:
                base, fork = (stack[-1][1] if stack else ()), (forks[key][1] if team and key in forks else None)
            if team:
                span = max(0.0, t - fork) if fork is not None else 0.0
                if not worker and stack:
                    cur[stack[-1][1]] -= span
                cut(FORK, i, keep=not worker)
                cur[base + (a,)] += span
            stack.append((a, base + (a,), team, int(ev.c[i])))
        elif typ in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
            name, role = defs.regions[a].name, defs.regions[a].role
            in_team = any(s[2] for s in stack)
            if typ == E.MPI_COLLEXIT:
                cut(COLLECTIVE, i)
            elif name in ("MPI_Init", "MPI_Init_thread") and "init" not in seen:
                seen.add("init")
                cut(INIT, i)
            elif name == "MPI_Finalize" and "fini" not in seen:
                seen.add("fini")
                cut(FINALIZE, i)
            elif role in BARRIERS and in_team:
                cut(OMP_BARRIER, i)
            cur[stack[-1][1]] += t - last
            last = t
            top = stack.pop()
            if top[2]:
                last_par = (top[3], top[1], stack[-1][1] if stack else None, t, len(cuts) + 1)
        elif typ == E.OMP_FORK:
            forks[(d.process, a)] = (stack[-1][1] if stack else (), t)
        elif typ in (E.MPI_SEND, E.MPI_SEND_COMPLETE, E.MPI_RECV, E.MPI_RECV_REQUEST, E.OMP_JOIN):
            if typ == E.OMP_JOIN:
                if stack:
                    cur[stack[-1][1]] += t - last
                last = t
                if not worker and last_par is not None and last_par[0] == a:
                    span = max(0.0, t - last_par[3])
                    where = cur if last_par[4] == len(cuts) + 1 else intervals[last_par[4]]
                    where[last_par[1]] += span
                    if last_par[2] is not None:
                        where[last_par[2]] -= span
                    last_par = None
            kind = {E.MPI_SEND: SEND, E.MPI_SEND_COMPLETE: SEND_COMPLETE, E.MPI_RECV: RECV,
                    E.MPI_RECV_REQUEST: RECV_REQUEST, E.OMP_JOIN: JOIN}[typ]
            cut(kind, i)
    if not worker:
        for p, v in cur.items():
            intervals[len(cuts) + 1][p] += v
    return cuts, {k: dict(v) for k, v in intervals.items()}


def first_rows_reference(b_loc, b_key, a_loc, a_key):
    """Slow reference of ``kernels.keyjoin.first_rows``: a dict from (location, key) to its first row."""
    first = {}
    for j, (l, k) in enumerate(zip(b_loc.tolist(), b_key.tolist())):
        if k == k:  # a NaN matches nothing
            first.setdefault((l, k), j)  # -0.0 and 0.0 are one key, as == says
    return [first.get((l, k), -1) for l, k in zip(a_loc.tolist(), a_key.tolist())]


def fill_rows_reference(row, kind, counts, want, loc, cut, rows):
    """Slow reference of ``kernels.keyjoin.fill_rows``: cut points stored location by location, ``counts``
    per location; the first row naming a point of kind ``want`` links it."""
    row = list(row)
    start = [sum(counts[:l]) for l in range(len(counts))]
    for l, c, r in zip(loc.tolist(), cut.tolist(), rows.tolist()):
        if 0 <= l < len(counts) and 1 <= c <= counts[l]:
            g = start[l] + c - 1
            if kind[g] == want and row[g] < 0:
                row[g] = r
    return row
