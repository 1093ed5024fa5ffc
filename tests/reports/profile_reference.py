"""Slow reference for ``analyzer.profile.profile_trace``: the original one-loop-per-event version.

The numba kernel (``analyzer/profile/kernel.py``) must reproduce it bit for
bit, including the order in which regions and overhead rows first appear.
"""

from __future__ import annotations

import os

import numpy as np

from analyzer.profile.ompp import ProfileError
from analyzer.profile.ompp import (BODY_OF, COLUMNS, HAS_BODY, OVERHEADS, PROGRAM, Profile, RegionRow,
                                   collective_volume, open_trace, overhead_class, region_kind)
from tracefmt.layout import NO_ID, EventType, Paradigm, Role

_I = {c: i for i, c in enumerate(COLUMNS)}


def profile_trace_reference(trace, volume: str = "naive") -> Profile:
    """The former pure-Python loop over every event, kept as the obviously-correct reference."""
    if volume not in ("naive", "minimal"):
        raise ProfileError(f"volume accounting {volume!r}: choose naive or minimal")
    if isinstance(trace, (str, os.PathLike)):
        source = os.fspath(trace)
        trace = open_trace(source)
    else:
        source = getattr(trace, "path", "<trace>")
    defs = trace.defs
    regions = defs.regions
    locs = [int(x) for x in trace.location_ids]
    loc_rank = {l: int(defs.locations[l].process) for l in locs}
    loc_thread = {l: int(defs.locations[l].thread) for l in locs}

    # FORK / JOIN times per (process, team id), from the masters
    fork: dict[tuple[int, int], float] = {}
    join: dict[tuple[int, int], float] = {}
    events = {}
    t_first, t_last = np.inf, -np.inf
    for l in locs:
        ev = trace.events(l)
        events[l] = ev
        if len(ev):
            t_first, t_last = min(t_first, float(ev.time[0])), max(t_last, float(ev.time[-1]))
        for kind, table in ((EventType.OMP_FORK, fork), (EventType.OMP_JOIN, join)):
            for i in np.flatnonzero(ev.type == kind):
                table[(loc_rank[l], int(ev.a[i]))] = float(ev.time[i])
    duration = max(t_last - t_first, 0.0) if np.isfinite(t_first) else 0.0

    rows: dict[int, RegionRow] = {}
    overheads: dict[tuple[str, int], np.ndarray] = {}
    threads_of_rank: dict[int, int] = {}
    for l in locs:
        threads_of_rank[loc_rank[l]] = threads_of_rank.get(loc_rank[l], 0) + 1

    def row(rid: int) -> RegionRow:
        if rid not in rows:
            r = regions[rid]
            fname = defs.files.get(r.file, "") if r.file != NO_ID else ""
            if not fname or r.begin_line == NO_ID:
                lines = ""
            elif r.end_line == NO_ID or r.end_line == r.begin_line:
                lines = f" ({r.begin_line})"  # the runtime knows where a construct starts, not always where it ends
            else:
                lines = f" ({r.begin_line}-{r.end_line})"
            rows[rid] = RegionRow(rid, r.name, f"{fname}{lines}", region_kind(r), r.role in HAS_BODY)
        return rows[rid]

    def ovh(name: str, rank: int) -> np.ndarray:
        key = (name, rank)
        if key not in overheads:
            overheads[key] = np.zeros(1 + len(OVERHEADS))
        return overheads[key]

    for l in locs:
        rank, thread = loc_rank[l], loc_thread[l]
        ev = events[l]
        T, TY = ev.time.tolist(), ev.type.tolist()
        A, B, C, D, E = ev.a.tolist(), ev.b.tolist(), ev.c.tolist(), ev.d.tolist(), ev.e.tolist()
        counters = [0.0] * 6  # running mpiT, inV, outV, recvC, sendC, collC of this thread
        stack: list[list] = []  # [region, enter time, counters at enter, body enter, body exit, team]
        active: dict[int, int] = {}  # region -> open instances on this thread (recursion)
        mpi_depth = 0
        par_stack: list[str] = []  # names of the enclosing parallel regions
        time_in_parallel = 0.0
        for i in range(len(T)):
            ty, t = TY[i], T[i]
            if ty == EventType.ENTER:
                rid = A[i]
                r = regions[rid]
                stack.append([rid, t, counters.copy(), None, None, C[i] if r.role == Role.OMP_PARALLEL else None])
                active[rid] = active.get(rid, 0) + 1
                if r.paradigm == Paradigm.MPI:
                    mpi_depth += 1
                if r.role in BODY_OF and len(stack) >= 2 and regions[stack[-2][0]].role == BODY_OF[r.role]:
                    stack[-2][3] = t
                if r.role == Role.OMP_PARALLEL:
                    par_stack.append(r.name)
            elif ty in (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT):
                if not stack:
                    raise ProfileError(f"{source}: location {l} (rank {rank} thread {thread}): exit at {t:.9f} s "
                                      f"(event {i}) without an open region")
                rid, t0, c0, b0, b1, team = stack.pop()
                r = regions[rid]
                if ty == EventType.MPI_COLLEXIT:
                    comm = defs.comms.get(B[i])
                    ranks = comm.ranks if comm is not None else ()
                    n = len(ranks) or 1
                    crank = ranks.index(rank) if rank in ranks else 0
                    root = C[i]
                    s, rv = collective_volume(r.name, D[i], E[i], n, root != NO_ID and root == rank, crank, volume)
                    counters[2] += s
                    counters[1] += rv
                    counters[5] += 1
                if r.paradigm == Paradigm.MPI:
                    mpi_depth -= 1
                    if mpi_depth == 0:
                        counters[0] += t - t0
                        if par_stack:
                            ovh(par_stack[-1], rank)[5] += t - t0
                        ovh(PROGRAM, rank)[5] += t - t0
                active[rid] -= 1
                rr = row(rid)
                vals = rr.per_loc.setdefault((rank, thread), np.zeros(len(COLUMNS)))
                vals[_I["execC"]] += 1
                if r.role in BODY_OF and stack and regions[stack[-1][0]].role == BODY_OF[r.role]:
                    stack[-1][4] = t
                parent_role = regions[stack[-1][0]].role if stack else None
                outermost = active[rid] == 0
                if outermost:
                    vals[_I["execT"]] += t - t0
                    for k, col in enumerate(("mpiT", "inV", "outV", "recvC", "sendC", "collC")):
                        vals[_I[col]] += counters[k] - c0[k]
                # body columns and overhead classes
                enter_t = exit_t = 0.0
                if r.role == Role.OMP_PARALLEL:
                    par_stack.pop()
                    f = fork.get((rank, team), t0)
                    j = join.get((rank, team), t)
                    enter_t, exit_t = max(t0 - f, 0.0), max(j - t, 0.0)
                    vals[_I["bodyT"]] += t - t0
                    vals[_I["enterT"]] += enter_t
                    vals[_I["exitT"]] += exit_t
                    vals[_I["execT"]] += enter_t + exit_t  # execT spans fork to join on every thread
                    o = ovh(r.name, rank)
                    o[0] += (t - t0) + enter_t + exit_t
                    o[4] += enter_t + exit_t  # thread start-up and shutdown: Mgmt
                    p = ovh(PROGRAM, rank)
                    p[4] += enter_t + exit_t
                    if not par_stack:
                        time_in_parallel += (t - t0) + enter_t + exit_t
                elif r.role in HAS_BODY and b0 is not None and b1 is not None:
                    enter_t, exit_t = b0 - t0, t - b1
                    vals[_I["bodyT"]] += b1 - b0
                    vals[_I["enterT"]] += enter_t
                    vals[_I["exitT"]] += exit_t
                    if r.role in (Role.OMP_CRITICAL, Role.OMP_ORDERED):
                        # waiting to enter is synchronisation, signalling the release is management
                        for name in ([par_stack[-1]] if par_stack else []) + [PROGRAM]:
                            ovh(name, rank)[1] += enter_t
                            ovh(name, rank)[4] += exit_t
                cls = overhead_class(r.role, r.name, parent_role)
                if cls is not None:
                    for name in ([par_stack[-1]] if par_stack else []) + [PROGRAM]:
                        ovh(name, rank)[1 + OVERHEADS.index(cls)] += t - t0
            elif ty == EventType.MPI_SEND:
                counters[4] += 1
                counters[2] += D[i]
            elif ty == EventType.MPI_RECV:
                counters[3] += 1
                counters[1] += D[i]
        if stack:
            raise ProfileError(f"{source}: location {l} (rank {rank} thread {thread}): region "
                              f"{regions[stack[-1][0]].name!r} entered at {stack[-1][1]:.9f} s is never left")
        if thread != 0:
            # a worker thread outside every parallel region idles: limited parallelism
            ovh(PROGRAM, rank)[3] += max(duration - time_in_parallel, 0.0)

    for rank, n in threads_of_rank.items():
        ovh(PROGRAM, rank)[0] = duration * n

    # drop MPI calls and measurement regions from the region profile: ompP shows MPI only as columns
    rows = {rid: r for rid, r in rows.items()
            if regions[rid].paradigm not in (Paradigm.MPI, Paradigm.MEASUREMENT)}
    header = {
        "duration": duration,
        "processes": float(len(threads_of_rank)),
        "max_threads": float(max(threads_of_rank.values(), default=0)),
    }
    return Profile(source, volume, rows, overheads, header)
