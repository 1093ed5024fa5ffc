"""Slow reference of the ideal-network replay (patterns.kernels.ideal): the same rules, straight from the
replay tables, advancing every location as far as it can again and again until all are done."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tracefmt.layout import Role

SYNCHRONISING = {Role.MPI_POINT2POINT, Role.MPI_COLL_BARRIER, Role.MPI_COLL_ONE2ALL, Role.MPI_COLL_ALL2ONE,
                 Role.MPI_COLL_ALL2ALL, Role.MPI_COLL_OTHER, Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER}


def ideal_end(ctx) -> float:
    """The ideal run's end (its latest location clock) minus the earliest first event."""
    P, S = ctx.tables["sync_points"], ctx.tables["time_segments"]
    C, B, Mb, T = (ctx.tables[n] for n in ("collectives", "omp_barriers", "omp_team_members", "omp_teams"))
    L = ctx.n_locations
    first = {l: float(ctx.trace.events(l).time[0]) for l in range(L) if ctx.trace.n_events(l)}
    comp = defaultdict(float)
    for loc, cut, cn, t in zip(S["loc"], S["cut"], S["cnode"], S["time"]):
        if Role(int(ctx.region_role[ctx.calltree.region[cn]])) not in SYNCHRONISING:
            comp[(int(loc), int(cut))] += float(t)
    cuts = defaultdict(list)
    for loc, cut, kind, row in zip(P["loc"], P["cut"], P["kind"], P["row"]):
        cuts[int(loc)].append((int(cut), int(kind), int(row)))
    members = defaultdict(list)
    for r in range(len(C)):
        if C["n_members"][r] >= 2 and C["complete"][r]:
            members[int(C["instance"][r])].append(r)
    bar = defaultdict(list)
    for r in range(len(B)):
        if B["team"][r] >= 0:
            bar[int(B["instance"][r])].append(r)
    clock = {l: first.get(l, 0.0) for l in range(L)}
    pos = {l: 0 for l in range(L)}
    charged = set()
    sent, forked, arrived, barr = {}, {}, {}, {}
    while any(pos[l] < len(cuts[l]) for l in range(L)):
        moved = False
        for l in range(L):
            while pos[l] < len(cuts[l]):
                cut, kind, row = cuts[l][pos[l]]
                if (l, cut) not in charged:
                    clock[l] += comp[(l, cut)]
                    charged.add((l, cut))
                if kind == 1 and row >= 0:
                    sent[row] = clock[l]
                elif kind == 3 and row >= 0:
                    if row not in sent:
                        break
                    clock[l] = max(clock[l], sent[row])
                elif kind == 5 and row >= 0 and C["n_members"][row] >= 2 and C["complete"][row]:
                    inst = int(C["instance"][row])
                    arrived.setdefault(row, clock[l])
                    if len([r for r in members[inst] if r in arrived]) < len(members[inst]):
                        break
                    role = Role(int(ctx.region_role[C["region"][row]]))
                    root = [r for r in members[inst] if C["rank"][r] == C["root"][r]]
                    if role == Role.MPI_COLL_ONE2ALL and row not in root and root:
                        clock[l] = max(arrived[row], arrived[root[0]])
                    elif role == Role.MPI_COLL_ALL2ONE and row not in root:
                        clock[l] = arrived[row]
                    else:
                        clock[l] = max(arrived[r] for r in members[inst])
                elif kind == 9 and row >= 0 and B["team"][row] >= 0:
                    inst = int(B["instance"][row])
                    barr.setdefault(row, clock[l])
                    if len([r for r in bar[inst] if r in barr]) < len(bar[inst]):
                        break
                    clock[l] = max(clock[l], max(barr[r] for r in bar[inst]))
                elif kind == 8 and row >= 0:
                    team = int(Mb["team"][row])
                    if Mb["loc"][row] == T["master_loc"][team]:
                        forked[team] = clock[l]
                    else:
                        if team not in forked:
                            break
                        clock[l] = forked[team]
                pos[l] += 1
                moved = True
        assert moved, "the reference ideal replay is stuck"
    for l in range(L):
        clock[l] += sum(v for (loc, cut), v in comp.items() if loc == l and cut > len(cuts[l]))
    return max(clock.values()) - min(first.values())
