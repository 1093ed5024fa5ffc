"""Per-location extraction: turn one walked location into table fragments.

After the walk (``kernels.walk.walk_events``) every event knows its innermost
call; here the communication, OpenMP and lock events of the location are
picked out with vectorised numpy and joined with the calls that contain them.
The fragments hold builder call-tree ids; ``analyzer.matching`` joins the
fragments of all locations into the tables of ``analyzer/tables.py``.
Only these fragments survive a location, so memory stays bounded by the
largest location plus the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracefmt.layout import NO_ID, EventType as E, Role

from .kernels.summary import positions_by_type
from .kernels.walk import pair_locks, pair_requests


@dataclass
class Calls:
    """Call instances of one location, in ENTER order (builder node ids)."""

    node: np.ndarray
    region: np.ndarray
    enter: np.ndarray
    exit: np.ndarray
    parent: np.ndarray
    team: np.ndarray  # team id of the innermost enclosing parallel region, -1 outside


def _call_cols(calls: Calls, idx: np.ndarray, prefix: str) -> dict:
    """Region / node / enter / exit columns of the calls ``idx`` (-1 = none)."""
    ok = idx >= 0
    j = np.where(ok, idx, 0)
    if len(calls.node) == 0:
        j = np.zeros(0, np.int64) if len(idx) == 0 else j
        return {
            prefix + "region": np.full(len(idx), -1, np.int32),
            prefix + "cnode": np.full(len(idx), -1, np.int64),
            prefix + "enter": np.full(len(idx), np.nan),
            prefix + "exit": np.full(len(idx), np.nan),
        }
    return {
        prefix + "region": np.where(ok, calls.region[j], -1).astype(np.int32),
        prefix + "cnode": np.where(ok, calls.node[j], -1).astype(np.int64),
        prefix + "enter": np.where(ok, calls.enter[j], np.nan),
        prefix + "exit": np.where(ok, calls.exit[j], np.nan),
    }


def _i(x) -> np.ndarray:
    return np.asarray(x).astype(np.int64)


def _ids(x) -> np.ndarray:
    """uint32 ids with NO_ID mapped to -1."""
    v = np.asarray(x).astype(np.int64)
    return np.where(v == NO_ID, -1, v)


def extract_location(loc: int, rank: int, etype, ea, eb, ec, ed, ee, flags, time, ev_call, calls: Calls,
                     region_role) -> dict[str, dict[str, np.ndarray]]:
    """Table fragments of one location (see module docstring)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    # one counting pass; every kind of event below is a slice of positions, never a full-array test
    start, by_type = positions_by_type(np.ascontiguousarray(etype, np.uint8))

    def of(t):
        return by_type[start[t]:start[t + 1]]

    def merged(*types):
        return np.sort(np.concatenate([of(t) for t in types]))

    # ---- point-to-point: sends and their completion -----------------------
    s_idx = of(E.MPI_SEND)
    s_req = _i(ee[s_idx])
    sendc_call = ev_call[s_idx].astype(np.int64)
    cancelled_send = np.zeros(len(s_idx), bool)
    nb = np.flatnonzero(s_req != 0)
    if len(nb):
        cand = np.sort(np.concatenate([s_idx[nb], of(E.MPI_SEND_COMPLETE), of(E.MPI_REQUEST_CANCELLED)]))
        partner = pair_requests(_i(ee[cand]), etype[cand] == E.MPI_SEND)
        where_in_cand = np.searchsorted(cand, s_idx[nb])
        p = partner[where_in_cand]
        has = p >= 0
        close_ev = np.where(has, cand[np.maximum(p, 0)], -1)
        sendc_call[nb] = np.where(has, ev_call[np.maximum(close_ev, 0)], -1)
        cancelled_send[nb] = has & (etype[np.maximum(close_ev, 0)] == E.MPI_REQUEST_CANCELLED)
    keep = ~cancelled_send
    s_idx, s_req, sendc_call = s_idx[keep], s_req[keep], sendc_call[keep]
    send = {
        "send_loc": np.full(len(s_idx), loc, np.int32),
        "send_rank": np.full(len(s_idx), rank, np.int32),
        "send_time": time[s_idx],
        "dest": _ids(ea[s_idx]),
        "comm": _ids(eb[s_idx]),
        "tag": _i(ec[s_idx]),
        "bytes": _i(ed[s_idx]),
        "send_request": s_req,
        "send_flags": flags[s_idx].astype(np.uint8),
        "send_pos": s_idx,
    }
    send.update(_call_cols(calls, ev_call[s_idx].astype(np.int64), "send_"))
    send.update(_call_cols(calls, sendc_call, "sendc_"))
    out["sends"] = send

    # ---- point-to-point: receives and their posting -----------------------
    r_idx = of(E.MPI_RECV)
    r_req = _i(ee[r_idx])
    post_ev = r_idx.copy()
    cancelled_recv = np.zeros(len(r_idx), bool)
    nb = np.flatnonzero(r_req != 0)
    if len(nb):
        cand = np.sort(np.concatenate([of(E.MPI_RECV_REQUEST), r_idx[nb]]))
        partner = pair_requests(_i(ee[cand]), etype[cand] == E.MPI_RECV_REQUEST)
        p = partner[np.searchsorted(cand, r_idx[nb])]
        post_ev[nb] = np.where(p >= 0, cand[np.maximum(p, 0)], r_idx[nb])
    # cancelled receive requests never produce an MPI_RECV: nothing to drop here
    del cancelled_recv
    recv_call = ev_call[r_idx].astype(np.int64)
    recv = {
        "recv_loc": np.full(len(r_idx), loc, np.int32),
        "recv_rank": np.full(len(r_idx), rank, np.int32),
        "recv_time": time[r_idx],
        "source": _ids(ea[r_idx]),
        "comm": _ids(eb[r_idx]),
        "tag": _i(ec[r_idx]),
        "recv_bytes": _i(ed[r_idx]),
        "recv_request": r_req,
        "recv_flags": flags[r_idx].astype(np.uint8),
        "recv_seq": np.arange(len(r_idx), dtype=np.int64),
        "recv_call": (np.int64(loc) << 32) | np.maximum(recv_call, 0),
        "post_time": time[post_ev],
        "post_pos": post_ev,
    }
    recv.update(_call_cols(calls, recv_call, "recv_"))
    recv.update(_call_cols(calls, ev_call[post_ev].astype(np.int64), "recvp_"))
    out["recvs"] = recv

    # ---- MPI collectives ----------------------------------------------------
    c_idx = of(E.MPI_COLLEXIT)
    coll = {
        "loc": np.full(len(c_idx), loc, np.int32),
        "rank": np.full(len(c_idx), rank, np.int32),
        "comm": _ids(eb[c_idx]),
        "root": _ids(ec[c_idx]),
        "sent": _i(ed[c_idx]),
        "recvd": _i(ee[c_idx]),
        "pos": c_idx,
    }
    cc = _call_cols(calls, ev_call[c_idx].astype(np.int64), "")
    coll.update(cc)
    out["collectives"] = coll

    # ---- OpenMP fork / join (master side) -----------------------------------
    f_idx = of(E.OMP_FORK)
    f_call = ev_call[f_idx].astype(np.int64)
    in_call = f_call >= 0
    fc = np.maximum(f_call, 0)
    out["forks"] = {
        "team_id": _i(ea[f_idx]),
        "size": _i(ec[f_idx]),
        "fork_time": time[f_idx],
        "master_loc": np.full(len(f_idx), loc, np.int32),
        # node the master is in at the fork (0 = the super-root: outside any call)
        "fork_node": np.where(in_call, calls.node[fc] if len(calls.node) else 0, 0).astype(np.int64),
        "parent_team_id": np.where(in_call, calls.team[fc] if len(calls.team) else -1, -1).astype(np.int64),
    }
    j_idx = of(E.OMP_JOIN)
    out["joins"] = {"team_id": _i(ea[j_idx]), "join_time": time[j_idx], "loc": np.full(len(j_idx), loc, np.int32)}

    # ---- OpenMP team members (every thread's parallel region) ---------------
    # parallel-region ENTERs that name a team: found among the calls (one per ENTER), then their events
    if len(calls.node):
        cand_calls = np.flatnonzero(region_role[calls.region] == Role.OMP_PARALLEL)
    else:
        cand_calls = np.zeros(0, np.int64)
    e_pos = of(E.ENTER)[cand_calls]  # the k-th call is opened by the k-th ENTER
    keep_par = ec[e_pos] != NO_ID
    pcalls = cand_calls[keep_par]
    p_pos = e_pos[keep_par]
    tn = _i(ed[p_pos])
    out["members"] = {
        "team_id": _i(ec[p_pos]),
        "loc": np.full(len(pcalls), loc, np.int32),
        "thread_num": np.where(tn == NO_ID, 0, tn).astype(np.int32),
        "enter": calls.enter[pcalls],
        "exit": calls.exit[pcalls],
        "region": calls.region[pcalls].astype(np.int32),
        "cnode": calls.node[pcalls].astype(np.int64),
    }

    # ---- OpenMP barriers ------------------------------------------------------
    if len(calls.node):
        crole = region_role[calls.region]
        bar = np.flatnonzero(((crole == Role.OMP_BARRIER) | (crole == Role.OMP_IMPLICIT_BARRIER)) & (calls.team >= 0))
    else:
        crole = np.zeros(0, np.uint8)
        bar = np.zeros(0, np.int64)
    out["barriers"] = {
        "team_id": calls.team[bar].astype(np.int64),
        "loc": np.full(len(bar), loc, np.int32),
        "region": calls.region[bar].astype(np.int32),
        "cnode": calls.node[bar].astype(np.int64),
        "implicit": crole[bar] == Role.OMP_IMPLICIT_BARRIER,
        "enter": calls.enter[bar],
        "exit": calls.exit[bar],
        "call": bar.astype(np.int64),  # ENTER order on the location
    }

    # ---- locks ----------------------------------------------------------------
    l_idx = merged(E.OMP_ACQUIRE_LOCK, E.OMP_RELEASE_LOCK)
    acq = etype[l_idx] == E.OMP_ACQUIRE_LOCK
    partner = pair_locks(_i(ea[l_idx]), acq)
    a_pos = np.flatnonzero(acq)
    rel = partner[a_pos]
    a_ev = l_idx[a_pos]
    rel_time = np.where(rel >= 0, time[l_idx[np.maximum(rel, 0)]], np.nan)
    lk = {
        "lock": _i(ea[a_ev]).astype(np.int32),
        "order": _i(ed[a_ev]),
        "loc": np.full(len(a_ev), loc, np.int32),
        "acquire_time": time[a_ev],
        "release_time": rel_time,
    }
    a_call = ev_call[a_ev].astype(np.int64)
    lc = _call_cols(calls, a_call, "")
    lk.update({"region": lc["region"], "cnode": lc["cnode"], "call_enter": lc["enter"], "call_exit": lc["exit"]})
    out["locks"] = lk
    return out
