"""The critical path as pieces of time on locations, for the timeline.

``patterns.critical_path`` reports the path as a profile (seconds per call path and location); a
timeline needs *where* it runs.  :func:`critical_path_pieces` follows the same walk as the backward
replay (``patterns.kernels.backward.critical_path``) over the same inputs
(``patterns.backward.backward_inputs``): from where the run ends, backwards on one location until a
synchronisation point sends the path to the location that caused the wait, until ``MPI_Init`` or the
start.  A piece runs from the cut point where the path reached the location to the one where it left
it (the location's first or last event at the ends), in seconds.
"""

from __future__ import annotations

import numpy as np

from patterns.backward import REQUIRES, backward_inputs

__all__ = ["critical_path_pieces"]


def critical_path_pieces(ctx, first_time, last_time) -> list[tuple[int, float, float]] | None:
    """``(location, start, end)`` of each piece of the critical path, latest first; None when the replay
    did not build the tables the path needs.  ``first_time(loc)`` / ``last_time(loc)``: the location's
    first and last event time."""
    if any(t not in ctx.tables for t in REQUIRES):
        return None
    inp = backward_inputs(ctx)
    if inp.n_locations == 0:
        return []
    P = ctx.table("sync_points")
    p_loc = np.asarray(P["loc"], np.int64)
    p_time = np.asarray(P["time"], np.float64)
    first_row = np.searchsorted(p_loc, np.arange(inp.n_locations + 1))  # rows in (loc, cut) order, cuts 1..n

    def time_of(loc: int, cut: int) -> float:
        if cut <= 0:
            return float(first_time(loc))
        if cut > int(inp.n_cuts[loc]):
            return float(last_time(loc))
        return float(p_time[first_row[loc] + cut - 1])

    sp_off, sp_cut, sp_loc = inp.sp_off, inp.sp_cut, inp.sp_loc
    pieces: list[tuple[int, int, int]] = []
    loc = int(inp.cp_start_loc)
    if inp.cp_start_sp >= 0:
        end, i = int(sp_cut[inp.cp_start_sp]), int(inp.cp_start_sp) - 1
    else:
        end, i = int(inp.n_cuts[loc]) + 1, int(sp_off[loc + 1]) - 1
    for _ in range(len(sp_loc) + 2):  # every point is left at most once
        moved = False
        while i >= sp_off[loc]:
            if inp.cp_stop[i]:
                pieces.append((loc, int(sp_cut[i]), end))
                return _times(pieces, time_of)
            nx = int(inp.cp_next[i])
            if nx >= 0 and nx != i:
                pieces.append((loc, int(sp_cut[i]), end))
                loc, end, i = int(sp_loc[nx]), int(sp_cut[nx]), nx - 1
                moved = True
                break
            i -= 1
        if not moved:
            pieces.append((loc, 0, end))
            break
    return _times(pieces, time_of)


def _times(pieces, time_of) -> list[tuple[int, float, float]]:
    return [(loc, time_of(loc, a), time_of(loc, b)) for loc, a, b in pieces]
