"""Slow reference of the OpenMP barrier waits (patterns.kernels.barrier_waits): a loop over the omp_barriers rows."""

from __future__ import annotations

import math

from tracefmt.layout import Role

BARRIERS = (int(Role.OMP_BARRIER), int(Role.OMP_IMPLICIT_BARRIER))


def barrier_waits_reference(bar, role_of_cnode) -> list[tuple]:
    """(row, instance, call path, location, ENTER, wait, implicit) of every member that waits, in row order."""
    def counted(r):
        return bar["team"][r] >= 0 and bar["cnode"][r] >= 0 and bar["instance"][r] >= 0

    rows = range(len(bar["instance"]))
    latest = {}
    for r in rows:  # every counted member, whatever its call path; a NaN ENTER makes the instance's latest NaN
        if counted(r):
            v, e = int(bar["instance"][r]), float(bar["enter"][r])
            old = latest.get(v, -math.inf)
            latest[v] = math.nan if math.isnan(e) or math.isnan(old) else max(old, e)
    out = []
    for r in rows:
        role = int(role_of_cnode[bar["cnode"][r]]) if bar["cnode"][r] >= 0 else -1
        if not counted(r) or role not in BARRIERS:
            continue
        v, ex = int(bar["instance"][r]), float(bar["exit"][r])
        first = math.nan if math.isnan(latest[v]) or math.isnan(ex) else min(latest[v], ex)
        w = first - float(bar["enter"][r]) - (float(bar["task_busy"][r]) if "task_busy" in bar else 0.0)
        if math.isfinite(w) and w > 0:
            out.append((r, v, int(bar["cnode"][r]), int(bar["loc"][r]), float(bar["enter"][r]), w,
                        role == int(Role.OMP_IMPLICIT_BARRIER)))
    return out
