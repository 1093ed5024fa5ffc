"""POP efficiency metrics (the POP Centre of Excellence's methodology), as lost time in seconds.

With N locations, the run's elapsed time T (first to last event over all locations), each location's
useful time u (``execution`` - ``mpi`` - ``omp_time``: computation outside the MPI and OpenMP
runtimes) and the elapsed time T_ideal of the same run on an ideal network (every MPI communication
and synchronisation call instantaneous but for the waiting its dependencies impose:
``patterns.kernels.ideal``; clamped to [max u, T]):

====================================  =====================================  =========================
efficiency                            formula                                lost time, per location
====================================  =====================================  =========================
parallel efficiency PE                avg u / T = LB x CommE                 T - u (``pop_inefficiency``)
load balance LB                       avg u / max u                          max u - u (``pop_load_imbalance``)
communication efficiency CommE        max u / T = SerE x TE                  T - max u (``pop_communication``)
serialisation efficiency SerE         max u / T_ideal                        T_ideal - max u (``pop_serialisation``)
transfer efficiency TE                T_ideal / T                            T - T_ideal (``pop_transfer``)
====================================  =====================================  =========================

Each efficiency is a ratio of metric totals: PE = ``pop_useful`` / ``pop_resources`` (N x T), LB =
``pop_useful`` / (``pop_useful`` + ``pop_load_imbalance``), CommE = 1 - ``pop_communication`` /
``pop_resources``, TE = 1 - ``pop_transfer`` / ``pop_resources``, SerE = CommE / TE
(:func:`efficiencies`).  Values sit at the root call path, one per location; the tree is inclusive:
``pop_resources`` = ``pop_useful`` + ``pop_inefficiency``, and so on down.  docs/analysis.md ("POP
efficiencies") compares them with the published definitions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tracefmt.layout import Role

from .api import Pattern
from .backward import REQUIRES as _BACKWARD_TABLES
from .backward import time_span
from .instances import cached

__all__ = ["pop_profile", "efficiencies", "useful_time", "location_spans", "IdealInputs", "ideal_inputs",
           "ideal_elapsed", "profile_arrays", "PATTERNS"]

REQUIRES = _BACKWARD_TABLES
#: call paths whose time the ideal replay replaces by the waiting it computes: MPI communication and
#: synchronisation, OpenMP barriers
_SYNCHRONISING = [int(r) for r in (Role.MPI_POINT2POINT, Role.MPI_COLL_BARRIER, Role.MPI_COLL_ONE2ALL,
                                   Role.MPI_COLL_ALL2ONE, Role.MPI_COLL_ALL2ALL, Role.MPI_COLL_OTHER,
                                   Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER)]
NAMES = ("pop_resources", "pop_useful", "pop_inefficiency", "pop_load_imbalance", "pop_communication",
         "pop_serialisation", "pop_transfer")


def efficiencies(totals) -> dict[str, float]:
    """The POP efficiencies from the totals of the ``pop_*`` metrics (a mapping name -> total)."""
    res, useful = float(totals["pop_resources"]), float(totals["pop_useful"])
    if res <= 0:
        return {}
    lb_den = useful + float(totals["pop_load_imbalance"])
    comm = 1.0 - float(totals["pop_communication"]) / res
    te = 1.0 - float(totals["pop_transfer"]) / res
    return {"parallel_efficiency": useful / res, "load_balance": useful / lb_den if lb_den > 0 else 1.0,
            "communication_efficiency": comm, "serialisation_efficiency": comm / te if te > 0 else 0.0,
            "transfer_efficiency": te}


def pop_profile(ctx) -> dict:
    """Every ``pop_*`` metric as a dense [C, L] array (computed once per context)."""
    return cached(ctx, "patterns.pop", lambda: _profile(ctx))


def useful_time(results) -> np.ndarray:
    """Useful time u per location (execution - mpi - omp_time, at least 0) from the ``[C, L]`` results."""
    u = results["execution"].sum(axis=0).copy()
    for name in ("mpi", "omp_time"):
        if name in results:
            u -= results[name].sum(axis=0)
    return np.maximum(u, 0.0)


def location_spans(trace, locs) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) event time of each location of ``locs`` (trace ids), NaN for one without events."""
    first, last = np.full(len(locs), np.nan), np.full(len(locs), np.nan)
    for i, l in enumerate(locs):
        span = time_span(trace, int(l))
        if span is not None:
            first[i], last[i] = span
    return first, last


class IdealInputs(NamedTuple):
    """The arrays :func:`patterns.kernels.ideal.ideal_replay` walks (see there), built from a context's
    tables; ``c_instance``: the ``instance`` of each dense collective instance id."""

    cut_off: np.ndarray
    kind: np.ndarray
    row: np.ndarray
    comp: np.ndarray
    comp_last: np.ndarray
    c_inst: np.ndarray
    c_type: np.ndarray
    c_root: np.ndarray
    c_off: np.ndarray
    c_loc: np.ndarray
    c_rows: np.ndarray
    c_instance: np.ndarray
    b_inst: np.ndarray
    b_off: np.ndarray
    b_loc: np.ndarray
    m_team: np.ndarray
    m_master: np.ndarray
    t_off: np.ndarray
    t_loc: np.ndarray
    n_messages: int


def ideal_inputs(ctx, members=None) -> IdealInputs:
    """The ideal replay's arrays of ``ctx`` (every location of its ``sync_points``).  ``members``: a mask of the
    collectives rows that are members in this walk (None: every row; a share passes its own rows: the
    others are another share's); only complete instances of two or more members count."""
    from .array_ops import dense_ids, location_offsets
    from .kernels.backward_build import interval_sums
    from .kernels.ideal import COLL_ALL, COLL_N2ONE, COLL_ONE2N

    L = ctx.n_locations
    P, S = ctx.table("sync_points"), ctx.table("time_segments")
    C, B = ctx.table("collectives"), ctx.table("omp_barriers")
    members_t, M = ctx.table("omp_team_members"), ctx.table("messages")
    # computation per interval: not MPI communication, not an OpenMP barrier (the replay makes those waits
    # itself); MPI_Init, MPI_Finalize and the like keep their time
    comp_cnode = ~np.isin(ctx.region_role[ctx.calltree.region], _SYNCHRONISING)  # per call path, then per row
    cut_off = location_offsets(np.asarray(P["loc"]), L)  # one pass: sync_points is grouped by location
    n_cuts = np.diff(cut_off)
    # per interval ending at a cut point (its row of P) and per location after its last one
    ok, comp, comp_last = interval_sums(np.asarray(S["loc"]), np.asarray(S["cut"]), np.asarray(S["cnode"]),
                                        np.asarray(S["time"], np.float64), comp_cnode, n_cuts, cut_off, len(P), L)
    if not ok:  # rows outside the tables: NumPy's indexing says where
        comp_seg = comp_cnode[np.asarray(S["cnode"], np.int64)]
        seg_loc, seg_cut = np.asarray(S["loc"], np.int64), np.asarray(S["cut"], np.int64)
        inner = comp_seg & (seg_cut <= n_cuts[seg_loc])
        seg_time = np.asarray(S["time"], np.float64)
        comp = np.bincount(cut_off[seg_loc[inner]] + seg_cut[inner] - 1, weights=seg_time[inner], minlength=len(P))
        comp_last = np.bincount(seg_loc[comp_seg & ~inner], weights=seg_time[comp_seg & ~inner], minlength=L)
    # complete collectives of two or more members; their members' locations and rows
    c_inst = np.full(len(C), -1, np.int64)
    c_type = np.zeros(0, np.int64)
    c_off, c_loc, c_rows = np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    c_instance = np.zeros(0, np.int64)
    if len(C):
        ok = (C["n_members"] >= 2) & (C["complete"] if "complete" in C else True)
        if members is not None:
            ok = ok & members
        rows = np.flatnonzero(ok)
        inst = np.asarray(C["instance"], np.int64)[rows]
        dense = dense_ids(inst)
        c_inst[rows] = dense
        o = rows[np.argsort(dense, kind="stable")]
        c_rows, c_loc = o.astype(np.int64), np.asarray(C["loc"], np.int64)[o]
        ni = int(dense.max()) + 1 if len(dense) else 0
        c_off = np.concatenate([[0], np.cumsum(np.bincount(dense, minlength=ni))]).astype(np.int64)
        role = ctx.region_role[np.maximum(np.asarray(C["region"], np.int64), 0)][rows]
        rtype = np.full(len(rows), COLL_ALL, np.int64)
        rtype[role == int(Role.MPI_COLL_ONE2ALL)] = COLL_ONE2N
        rtype[role == int(Role.MPI_COLL_ALL2ONE)] = COLL_N2ONE
        c_type = np.full(ni, COLL_ALL, np.int64)
        c_type[dense] = rtype
        c_instance = np.zeros(ni, np.int64)
        c_instance[dense] = inst
    c_root = (np.asarray(C["rank"]) == np.asarray(C["root"])) if len(C) else np.zeros(0, bool)
    b_inst = np.full(len(B), -1, np.int64)
    b_off, b_loc = np.zeros(1, np.int64), np.zeros(0, np.int64)
    if _in_instance_order(B):  # the replay's table: its rows are the groups already
        b_inst = np.asarray(B["instance"], np.int64)
        b_loc = np.asarray(B["loc"], np.int64)
        b_off = np.concatenate([[0], np.cumsum(np.bincount(b_inst))])
    elif len(B):
        ok = np.asarray(B["team"], np.int64) >= 0
        rows = np.flatnonzero(ok)
        dense = dense_ids(np.asarray(B["instance"], np.int64)[rows])
        b_inst[rows] = dense
        o = rows[np.argsort(dense, kind="stable")]
        b_loc = np.asarray(B["loc"], np.int64)[o]
        b_off = np.concatenate([[0], np.cumsum(np.bincount(dense, minlength=int(dense.max()) + 1 if len(dense) else 0))])
    teams = ctx.table("omp_teams")
    m_team = np.asarray(members_t["team"], np.int64) if len(members_t) else np.zeros(0, np.int64)
    m_master = (np.asarray(members_t["loc"]) == np.asarray(teams["master_loc"])[m_team]) if len(members_t) else \
        np.zeros(0, bool)
    nt = len(teams)
    t_order = np.argsort(m_team, kind="stable")
    t_loc = np.asarray(members_t["loc"], np.int64)[t_order] if len(members_t) else np.zeros(0, np.int64)
    t_off = np.concatenate([[0], np.cumsum(np.bincount(m_team, minlength=nt))]).astype(np.int64)
    return IdealInputs(cut_off, np.asarray(P["kind"]), np.asarray(P["row"]), comp, comp_last, c_inst, c_type,
                       c_root.astype(np.bool_), np.asarray(c_off, np.int64), c_loc, c_rows, c_instance, b_inst,
                       np.asarray(b_off, np.int64), b_loc, m_team, m_master.astype(np.bool_), t_off, t_loc, len(M))


def _in_instance_order(B) -> bool:
    """Whether every omp_barriers row has a team and the instances are numbered 0, 1, ... in row order (as the
    replay writes the table): each instance's members are then a run of rows, in row order, with no sort."""
    inst = np.asarray(B["instance"])
    if not len(inst) or np.asarray(B["team"]).min() < 0:
        return False
    step = np.diff(inst)
    return bool(inst[0] == 0 and step.min(initial=0) >= 0 and step.max(initial=0) <= 1)


def ideal_elapsed(ctx) -> tuple[float, float]:
    """(elapsed time T, elapsed time on an ideal network), both from the earliest event of the run."""
    from .kernels.ideal import ideal_replay

    L = ctx.n_locations
    first, last = location_spans(ctx.trace, range(L))
    t0 = np.nanmin(first) if np.isfinite(first).any() else 0.0
    elapsed = (np.nanmax(last) - t0) if np.isfinite(last).any() else 0.0
    x = ideal_inputs(ctx)
    start = np.where(np.isfinite(first), first, t0)
    final = ideal_replay(x.cut_off, x.kind, x.row, x.comp, x.comp_last, start.astype(np.float64), x.c_inst,
                         x.c_type, x.c_root, x.c_off, x.c_loc, x.c_rows, x.b_inst, x.b_off, x.b_loc, x.m_team,
                         x.m_master, x.t_off, x.t_loc, x.n_messages)
    return float(elapsed), float(np.max(final) - t0) if L else 0.0


def _profile(ctx) -> dict:
    L = ctx.n_locations
    u = useful_time(ctx.results)
    T, T_ideal = ideal_elapsed(ctx)
    u = np.minimum(u, T)
    top = float(u.max()) if L else 0.0
    return profile_arrays(ctx.n_cnodes, u, T, T_ideal, top)


def profile_arrays(C: int, u: np.ndarray, T: float, T_ideal: float, top: float) -> dict:
    """The ``pop_*`` metrics as dense [C, len(u)] arrays (their values at the root call path) from the useful
    times ``u`` (at most ``T``), the elapsed time ``T``, the ideal one and the largest useful time ``top``;
    ``"_elapsed"``/``"_ideal"``: T and T_ideal."""
    L = len(u)
    ti = min(max(T_ideal, top), T)
    per_loc = {"pop_resources": np.full(L, T), "pop_useful": u, "pop_inefficiency": T - u,
               "pop_load_imbalance": top - u, "pop_communication": np.full(L, T - top),
               "pop_serialisation": np.full(L, ti - top), "pop_transfer": np.full(L, T - ti)}
    out = {}
    for name, v in per_loc.items():
        a = np.zeros((C, L))
        a[0] = v
        out[name] = a
    out["_elapsed"], out["_ideal"] = T, T_ideal
    return out


class _Pop(Pattern):
    unit = "sec"
    requires = REQUIRES
    depends = ("execution", "mpi", "omp_time")

    def compute(self, ctx):
        return pop_profile(ctx)[self.name]


def _make(name, parent, display, description, diagnosis) -> type:
    return type("Pop" + name[4:].title().replace("_", ""), (_Pop,), {
        "name": name, "parent": parent, "display_name": display, "description": description,
        "diagnosis": diagnosis, "__module__": __name__})


PATTERNS = [
    _make("pop_resources", None, "POP: resources", "The run's elapsed time on every location (N x T): the "
          "resources the POP efficiencies divide up; at the root call path.",
          "The denominator of the POP efficiencies (expert-analyze prints them as a table)."),
    _make("pop_useful", "pop_resources", "Useful computation", "Computation outside the MPI and OpenMP "
          "runtimes per location (execution - MPI - OpenMP), at the root call path.  Parallel efficiency "
          "= pop_useful / pop_resources.", "Low against the resources: see the inefficiencies beside it."),
    _make("pop_inefficiency", "pop_resources", "POP: lost time", "Elapsed time not spent in useful "
          "computation, per location (T - u): 1 - parallel efficiency, in seconds.",
          "Expand it: load imbalance or communication (serialisation, transfer)."),
    _make("pop_load_imbalance", "pop_inefficiency", "Load imbalance", "Per location the useful time it lacks "
          "against the busiest location (max u - u); load balance = pop_useful / (pop_useful + this).",
          "Move work from the busiest locations to the others (see imbalance and the delay costs)."),
    _make("pop_communication", "pop_inefficiency", "Communication", "Time beyond the busiest location's "
          "computation (T - max u) on every location: 1 - communication efficiency, in seconds.",
          "Expand it: serialisation (dependencies) or transfer (the network)."),
    _make("pop_serialisation", "pop_communication", "Serialisation", "Time an ideal network would still "
          "lose to dependencies between locations (T_ideal - max u): the waiting that remains when every "
          "transfer is instantaneous.", "Reorder or overlap communication and computation; look at the "
          "critical path and the delay costs."),
    _make("pop_transfer", "pop_communication", "Transfer", "Time lost to the actual network (T - T_ideal): "
          "the elapsed time minus that of the same run with instantaneous transfers.",
          "Send fewer or larger messages, overlap transfers, or use a faster interconnect."),
]
