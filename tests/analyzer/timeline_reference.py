"""Slow reference of ``analyzer.replay.kernels.timeline.cut_timeline``: one location's cut points and
per-interval exclusive times, walked event by event in Python with call paths as region tuples.

``reference_timeline(trace, loc, fork_paths)`` returns ``(cuts, intervals)``: the cut points as
``(kind, event index)`` in order, and ``{interval: {call path tuple: seconds}}`` (before the fork and
join shifts, which ``analyzer.replay.timeline`` adds).  ``fork_paths[(process, team id)]`` is the
master's call path at the fork of that team (a worker's parallel region continues it); the
function adds the forks it sees.
"""

from __future__ import annotations

from collections import defaultdict

from tracefmt.layout import NO_ID, EventType as E, Role

SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)
BARRIERS = (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER)


def reference_timeline(trace, loc, fork_paths):
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

    for i in range(len(ev)):
        t, typ, a = float(ev.time[i]), int(ev.type[i]), int(ev.a[i])
        if typ == E.ENTER:
            if stack:
                cur[stack[-1][1]] += t - last
            last = t
            role = defs.regions[a].role
            team = role == Role.OMP_PARALLEL and int(ev.c[i]) != NO_ID
            if team and int(ev.d[i]) not in (0, NO_ID):
                base = fork_paths[(d.process, int(ev.c[i]))]
            else:
                base = stack[-1][1] if stack else ()
            if team:
                cut(FORK, i, keep=not worker)
            stack.append((a, base + (a,), team))
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
            stack.pop()
        elif typ == E.OMP_FORK:
            fork_paths[(d.process, a)] = stack[-1][1] if stack else ()
        elif typ in (E.MPI_SEND, E.MPI_SEND_COMPLETE, E.MPI_RECV, E.MPI_RECV_REQUEST, E.OMP_JOIN):
            if typ == E.OMP_JOIN:
                if stack:
                    cur[stack[-1][1]] += t - last
                last = t
            kind = {E.MPI_SEND: SEND, E.MPI_SEND_COMPLETE: SEND_COMPLETE, E.MPI_RECV: RECV,
                    E.MPI_RECV_REQUEST: RECV_REQUEST, E.OMP_JOIN: JOIN}[typ]
            cut(kind, i)
    if not worker:
        for p, v in cur.items():
            intervals[len(cuts) + 1][p] += v
    return cuts, {k: dict(v) for k, v in intervals.items()}
