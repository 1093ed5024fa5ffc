"""The ``time_segments`` and ``sync_points`` tables: every location's time line, cut at its synchronisation points.

Built only when a pattern requires them (the critical path, the delay analysis and the POP metrics,
``patterns.backward``).  Per location, :func:`location_fragments` runs the jitted pass of
``kernels.timeline`` over the events the replay has just walked (it also moves the OpenMP fork and join
spans onto the parallel region); :func:`build_timeline` joins the fragments of all locations into the two
tables (``patterns/tables.py``) and links every cut point to the row of the table it belongs to (the
message, the collective member, the team member, the barrier member, the team).
"""

from __future__ import annotations

import numpy as np

from patterns.tables import SYNC_POINTS, TIME_SEGMENTS, Table

from .kernels import timeline as K

#: tables the timeline links its cut points to: they are built along with it
LINKED_TABLES = ("messages", "collectives", "omp_teams", "omp_team_members", "omp_barriers")
#: the fragment kinds this module adds to a location's fragments
FRAGMENT_KINDS = ("cuts", "segments", "send_cuts", "recv_cuts")


def region_flags(names) -> np.ndarray:
    """uint8 per region id: FLAG_INIT for MPI_Init / MPI_Init_thread, FLAG_FINALIZE for MPI_Finalize."""
    flags = np.zeros(len(names), np.uint8)
    for rid, name in enumerate(names):
        if name in ("MPI_Init", "MPI_Init_thread"):
            flags[rid] = K.FLAG_INIT
        elif name == "MPI_Finalize":
            flags[rid] = K.FLAG_FINALIZE
    return flags


class Scratch:
    """What the kernel borrows across the locations of one share: zeroed per-node arrays (grown with the call
    tree) and the forks of the masters walked so far (team id -> fork time; processes are walked one after
    the other and a master before its workers, so the latest fork of a team id is the one of this process)."""

    def __init__(self):
        self.acc = np.zeros(0, np.float64)
        self.seen = np.zeros(0, np.int8)
        self._forks: dict[int, float] = {}
        self._arrays = (np.zeros(0, np.int64), np.zeros(0, np.float64))

    def arrays(self, n_nodes: int):
        if self.acc.shape[0] < n_nodes:
            self.acc = np.zeros(2 * n_nodes + 64, np.float64)
            self.seen = np.zeros(2 * n_nodes + 64, np.int8)
        return self.acc, self.seen

    def forks(self):
        return self._arrays

    def add_forks(self, teams: np.ndarray, times: np.ndarray) -> None:
        if len(teams):
            self._forks.update(zip(teams.tolist(), times.tolist()))
            keys = np.array(sorted(self._forks), np.int64)
            self._arrays = (keys, np.array([self._forks[k] for k in keys.tolist()], np.float64))


def location_fragments(loc: int, cols, calls, region_role, flags, is_worker: bool, n_nodes: int,
                       scratch: Scratch) -> dict:
    """The timeline fragments of one location (builder call-tree ids in ``cnode``)."""
    acc, seen = scratch.arrays(n_nodes)
    fork_team, fork_time = scratch.forks()
    (kind, event, when, call, e_int, e_node, e_time, send_cuts, recv_cuts, in_order) = K.cut_timeline(
        cols.type, cols.time, cols.a, cols.c, cols.d, cols.e, calls.node, region_role, flags, bool(is_worker),
        fork_team, fork_time, acc, seen)
    forks = cols.type == K.OMP_FORK
    scratch.add_forks(cols.a[forks].astype(np.int64), cols.time[forks])
    if not in_order:
        o = np.argsort(e_int, kind="stable")
        e_int, e_node, e_time = e_int[o], e_node[o], e_time[o]
    n = len(kind)
    node = np.where(call >= 0, calls.node[np.maximum(call, 0)], -1) if len(calls.node) else np.full(n, -1)
    enter = np.where(call >= 0, calls.enter[np.maximum(call, 0)], np.nan) if len(calls.node) else np.full(n, np.nan)
    return {
        "cuts": {"loc": np.full(n, loc, np.int32), "cut": np.arange(1, n + 1, dtype=np.int64), "kind": kind,
                 "event": event, "time": when, "cnode": node.astype(np.int32), "enter": enter},
        "segments": {"loc": np.full(len(e_int), loc, np.int32), "cut": e_int, "cnode": e_node, "time": e_time},
        "send_cuts": {"loc": np.full(len(send_cuts), loc, np.int32), "event": send_cuts[:, 0],
                      "send_cut": send_cuts[:, 1], "sendc_cut": send_cuts[:, 2]},
        "recv_cuts": {"loc": np.full(len(recv_cuts), loc, np.int32),
                      "seq": np.arange(len(recv_cuts), dtype=np.int64),
                      "recv_cut": recv_cuts[:, 0], "recvp_cut": recv_cuts[:, 1]},
    }


def _key(loc, x) -> np.ndarray:
    return (np.asarray(loc, np.int64) << 40) + np.asarray(x, np.int64)


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, missing=-1) -> np.ndarray:
    """``values`` at the position of each ``wanted`` key in ``keys`` (any order), ``missing`` where absent."""
    if len(keys) == 0 or len(wanted) == 0:
        return np.full(len(wanted), missing, np.int64)
    o = np.argsort(keys, kind="stable")
    sk = keys[o]
    pos = np.minimum(np.searchsorted(sk, wanted), len(sk) - 1)
    found = sk[pos] == wanted
    return np.where(found, np.asarray(values, np.int64)[o][pos], missing)


def _match_times(loc_a, t_a, loc_b, t_b) -> np.ndarray:
    """For every (loc_a, t_a): the index of a row of (loc_b, t_b) with the same location and time, or -1."""
    na, nb = len(loc_a), len(loc_b)
    if na == 0 or nb == 0:
        return np.full(na, -1, np.int64)
    L = np.concatenate([np.asarray(loc_b, np.int64), np.asarray(loc_a, np.int64)])
    T = np.concatenate([np.asarray(t_b, np.float64), np.asarray(t_a, np.float64)])
    is_a = np.concatenate([np.zeros(nb, np.int8), np.ones(na, np.int8)])
    idx = np.concatenate([np.arange(nb), np.arange(na)])
    o = np.lexsort((is_a, T, L))  # per (location, time): the b rows first
    Ls, Ts = L[o], T[o]
    new = np.ones(len(o), bool)
    new[1:] = (Ls[1:] != Ls[:-1]) | (Ts[1:] != Ts[:-1])
    first = np.flatnonzero(new)[np.cumsum(new) - 1]  # first sorted position of each run
    out = np.full(na, -1, np.int64)
    a_pos = np.flatnonzero(is_a[o] == 1)
    head = first[a_pos]
    ok = is_a[o][head] == 0
    out[idx[o][a_pos[ok]]] = idx[o][head[ok]]
    return out


def _loc_of(frag: dict) -> int:
    """The location of a per-location fragment (-1 when it has no row: any place will do)."""
    return int(frag["loc"][0]) if len(frag["loc"]) else -1


def _concat(frags: list[dict]) -> dict:
    if not frags:
        return {}
    return {k: np.concatenate([f[k] for f in frags]) for k in frags[0]}


def build_timeline(frags: dict[str, list], tables: dict[str, Table], new_id: np.ndarray,
                   parent: np.ndarray) -> dict[str, Table]:
    """``time_segments`` and ``sync_points`` from the fragments of all locations (in walk order).

    ``tables``: the replay tables already built (at least :data:`LINKED_TABLES`, final call-path
    ids); ``new_id``: final call-path id of every builder node; ``parent``: the final call tree's
    parent array.
    """
    order = sorted(range(len(frags.get("cuts", []))), key=lambda j: _loc_of(frags["cuts"][j]))
    cuts = _concat([frags["cuts"][j] for j in order])
    segs = _concat([frags["segments"][j] for j in order])
    if not cuts:
        cuts = {k: np.zeros(0, dt) for k, dt in SYNC_POINTS.items()} | {"event": np.zeros(0, np.int64)}
        cuts["cnode"] = np.zeros(0, np.int32)
    if not segs:
        segs = {k: np.zeros(0, dt) for k, dt in TIME_SEGMENTS.items()}
    seg_cnode = np.where(segs["cnode"] >= 0, new_id[np.maximum(segs["cnode"], 0)], -1)
    kind = cuts["kind"].astype(np.int64)
    row = np.full(len(kind), -1, np.int64)
    M = tables.get("messages")
    if M is not None and len(M):
        sc = _concat(frags.get("send_cuts", []))
        rc = _concat(frags.get("recv_cuts", []))
        m_rows = np.arange(len(M), dtype=np.int64)
        if sc:
            s_sel = _lookup(_key(sc["loc"], sc["event"]), np.arange(len(sc["loc"])),
                            _key(M["send_loc"], M["send_pos"]))
            ok = s_sel >= 0
            send_cut = np.where(ok, sc["send_cut"][np.maximum(s_sel, 0)], -1)
            sendc_cut = np.where(ok, sc["sendc_cut"][np.maximum(s_sel, 0)], -1)
            row = _fill(row, cuts, kind == K.SEND, M["send_loc"], send_cut, m_rows)
            blocking = sendc_cut == send_cut
            row = _fill(row, cuts, kind == K.SEND_COMPLETE, M["send_loc"][~blocking], sendc_cut[~blocking],
                        m_rows[~blocking])
        if rc:
            r_sel = _lookup(_key(rc["loc"], rc["seq"]), np.arange(len(rc["loc"])), _key(M["recv_loc"], M["recv_seq"]))
            ok = r_sel >= 0
            recv_cut = np.where(ok, rc["recv_cut"][np.maximum(r_sel, 0)], -1)
            recvp_cut = np.where(ok, rc["recvp_cut"][np.maximum(r_sel, 0)], -1)
            row = _fill(row, cuts, kind == K.RECV, M["recv_loc"], recv_cut, m_rows)
            posted = recvp_cut != recv_cut
            row = _fill(row, cuts, kind == K.RECV_REQUEST, M["recv_loc"][posted], recvp_cut[posted], m_rows[posted])
    C = tables.get("collectives")
    if C is not None and len(C):
        sel = kind == K.COLLECTIVE
        row[sel] = _lookup(_key(C["loc"], C["pos"]), np.arange(len(C["loc"])), _key(cuts["loc"][sel], cuts["event"][sel]))
    members = tables.get("omp_team_members")
    teams = tables.get("omp_teams")
    if members is not None and len(members) and teams is not None:
        sel = np.flatnonzero(kind == K.FORK)
        row[sel] = _match_times(cuts["loc"][sel], cuts["time"][sel], members["loc"], members["enter"])
    B = tables.get("omp_barriers")
    if B is not None and len(B):
        sel = np.flatnonzero(kind == K.OMP_BARRIER)
        row[sel] = _match_times(cuts["loc"][sel], cuts["time"][sel], B["loc"], B["exit"])
    if teams is not None and len(teams):
        sel = np.flatnonzero(kind == K.JOIN)
        row[sel] = _match_times(cuts["loc"][sel], cuts["time"][sel], teams["master_loc"], teams["join_time"])
    segments = Table({"loc": segs["loc"].astype(np.int32, copy=False), "cut": segs["cut"].astype(np.int64, copy=False),
                      "cnode": seg_cnode.astype(np.int32), "time": segs["time"].astype(np.float64, copy=False)})
    pc = np.asarray(cuts["cnode"], np.int64)
    points = Table({"loc": cuts["loc"].astype(np.int32), "cut": cuts["cut"].astype(np.int64),
                    "kind": kind.astype(np.int8), "row": row, "time": cuts["time"].astype(np.float64),
                    "cnode": np.where(pc >= 0, new_id[np.maximum(pc, 0)], -1).astype(np.int32),
                    "enter": np.asarray(cuts["enter"], np.float64)})
    return {"time_segments": segments, "sync_points": points}


def _fill(row, cuts, sel_kind, loc, cut, rows) -> np.ndarray:
    """Set ``row`` of the cut points of kind ``sel_kind`` that are the (loc, cut) of some table row."""
    sel = np.flatnonzero(sel_kind)
    if len(sel) == 0:
        return row
    ok = cut >= 0
    found = _lookup(_key(loc[ok], cut[ok]), rows[ok], _key(cuts["loc"][sel], cuts["cut"][sel]))
    row[sel] = np.where(found >= 0, found, row[sel])
    return row
