"""The ``time_segments`` and ``sync_points`` tables: every location's time line, cut at its synchronisation points.

Built only when a pattern requires them (the critical path and the delay analysis,
``patterns.backward``).  Per location, :func:`location_fragments` runs the jitted pass of
``kernels.timeline`` over the events the replay has just walked; :func:`build_timeline` joins the
fragments of all locations into the two tables (``patterns/tables.py``), links every cut point to the
row of the table it belongs to (the message, the collective member, the team member, the barrier
member, the team), and moves the OpenMP fork and join spans onto the parallel region the way
Scalasca's time maps do: on every team member ENTER(parallel) - FORK is charged to the parallel
region in the interval after its fork cut (on the master it is taken from the caller in the interval
before), and on the master JOIN - EXIT(parallel) is charged to the parallel region instead of the
caller in the interval holding that EXIT.
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
    """Zeroed per-node arrays the kernel borrows (grown with the call tree, reused across locations)."""

    def __init__(self):
        self.acc = np.zeros(0, np.float64)
        self.seen = np.zeros(0, np.int8)

    def arrays(self, n_nodes: int):
        if self.acc.shape[0] < n_nodes:
            self.acc = np.zeros(2 * n_nodes + 64, np.float64)
            self.seen = np.zeros(2 * n_nodes + 64, np.int8)
        return self.acc, self.seen


def location_fragments(loc: int, cols, calls, region_role, flags, is_worker: bool, n_nodes: int,
                       scratch: Scratch) -> dict:
    """The timeline fragments of one location (builder call-tree ids in ``cnode``)."""
    acc, seen = scratch.arrays(n_nodes)
    (kind, event, when, aux, call, e_int, e_node, e_time, send_cuts, recv_cuts) = K.cut_timeline(
        cols.type, cols.time, cols.a, cols.c, cols.e, calls.node, region_role, flags, bool(is_worker), acc, seen)
    n = len(kind)
    node = np.where(call >= 0, calls.node[np.maximum(call, 0)], -1) if len(calls.node) else np.full(n, -1)
    enter = np.where(call >= 0, calls.enter[np.maximum(call, 0)], np.nan) if len(calls.node) else np.full(n, np.nan)
    return {
        "cuts": {"loc": np.full(n, loc, np.int32), "cut": np.arange(1, n + 1, dtype=np.int64), "kind": kind,
                 "event": event, "time": when, "aux": aux, "cnode": node.astype(np.int32), "enter": enter},
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
    cuts = _concat(frags.get("cuts", []))
    segs = _concat(frags.get("segments", []))
    if not cuts:
        cuts = {k: np.zeros(0, dt) for k, dt in SYNC_POINTS.items()} | {"event": np.zeros(0, np.int64),
                                                                         "aux": np.zeros(0, np.int64)}
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
    extra = []  # fork / join shifts: (loc, interval, cnode, seconds)
    if members is not None and len(members) and teams is not None:
        sel = np.flatnonzero(kind == K.FORK)
        mrow = _match_times(cuts["loc"][sel], cuts["time"][sel], members["loc"], members["enter"])
        row[sel] = mrow
        ok = mrow >= 0
        sel, mrow = sel[ok], mrow[ok]
        team = np.asarray(members["team"], np.int64)[mrow]
        par = np.asarray(members["cnode"], np.int64)[mrow]
        fork = np.maximum(np.nan_to_num(members["enter"][mrow] - teams["fork_time"][team]), 0.0)
        master = members["loc"][mrow] == teams["master_loc"][team]
        loc = cuts["loc"][sel]
        cut = cuts["cut"][sel]
        caller = np.where(par >= 0, parent[np.maximum(par, 0)], -1)
        extra.append((loc, cut + 1, par, fork))
        extra.append((loc[master], cut[master], caller[master], -fork[master]))
        join = np.maximum(np.nan_to_num(teams["join_time"][team] - members["exit"][mrow]), 0.0)
        aux = cuts["aux"][sel]
        m2 = master & (aux > 0)
        extra.append((loc[m2], aux[m2], par[m2], join[m2]))
        extra.append((loc[m2], aux[m2], caller[m2], -join[m2]))
    B = tables.get("omp_barriers")
    if B is not None and len(B):
        sel = np.flatnonzero(kind == K.OMP_BARRIER)
        row[sel] = _match_times(cuts["loc"][sel], cuts["time"][sel], B["loc"], B["exit"])
    if teams is not None and len(teams):
        sel = np.flatnonzero(kind == K.JOIN)
        row[sel] = _match_times(cuts["loc"][sel], cuts["time"][sel], teams["master_loc"], teams["join_time"])
    loc = [segs["loc"].astype(np.int32)] + [np.asarray(e[0], np.int32) for e in extra]
    cut = [segs["cut"].astype(np.int64)] + [np.asarray(e[1], np.int64) for e in extra]
    cn = [seg_cnode.astype(np.int32)] + [np.asarray(e[2], np.int32) for e in extra]
    tm = [segs["time"].astype(np.float64)] + [np.asarray(e[3], np.float64) for e in extra]
    loc, cut, cn, tm = (np.concatenate(x) for x in (loc, cut, cn, tm))
    keep = cn >= 0
    o = np.lexsort((cut[keep], loc[keep]))
    segments = Table({"loc": loc[keep][o], "cut": cut[keep][o], "cnode": cn[keep][o], "time": tm[keep][o]})
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
