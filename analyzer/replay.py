"""The replay engine: one pass per location, then vectorised table builders.

``replay(trace)`` walks the locations one at a time (``kernels.walk``),
keeping only per-location summaries (visits and times per call-tree node)
and table fragments, so memory is bounded by the largest location plus the
tables.  Worker threads continue their master's call path: the node of a
parallel region on a worker is the child of the master's node at the FORK
of that team, so masters are walked before the workers of their teams
(locations are taken in (process, thread) order; a location whose team is
not yet known is deferred and retried).

Time conventions (EXPERT / Scalasca, made explicit):

* ``visits[c, l]`` counts the ENTERs of call path ``c`` on location ``l``;
* ``incl_time`` is the sum of EXIT - ENTER over those visits;
* ``excl_time`` is ``incl_time`` minus the inclusive time of the direct
  children on the same location.  A worker's parallel region is a child of
  the master's fork call path, but its time is charged on the worker, so the
  master's fork call path keeps its full exclusive time there;
* time a location spends outside every region (before its first ENTER,
  between its top-level calls) is not counted anywhere;
* calls still open at the end of a (truncated) location are closed at that
  location's last timestamp and reported in ``ctx.problems``.
"""

from __future__ import annotations

import numpy as np

from tracefmt.errors import TraceFormatError
from tracefmt.layout import LockKind

from .calltree import SYNTHETIC_ROOT_NAME, CallTreeBuilder
from .context import AnalysisContext
from .extract import Calls, extract_location
from .kernels import walk as K
from .matching import build_collectives, build_locks, build_messages, build_omp, concat, remap_cnodes

ALL_TABLES = ("messages", "collectives", "omp_teams", "omp_team_members", "omp_barriers", "locks")


class ReplayError(TraceFormatError):
    """The events of a location cannot be replayed (unbalanced ENTER/EXIT, unknown region or team)."""


def region_arrays(defs):
    """Region name / paradigm / role arrays by id, plus one extra id for a synthetic root."""
    n = (max(defs.regions) + 1 if defs.regions else 0) + 1
    names = [""] * n
    paradigm = np.zeros(n, np.uint8)
    role = np.zeros(n, np.uint8)
    for rid, r in defs.regions.items():
        names[rid] = r.name
        paradigm[rid] = int(r.paradigm)
        role[rid] = int(r.role)
    names[n - 1] = SYNTHETIC_ROOT_NAME
    return names, paradigm, role


def _location_meta(trace):
    loc_ids = np.asarray(trace.location_ids, np.int64)
    n_loc = int(loc_ids.max()) + 1 if len(loc_ids) else 0
    proc = np.zeros(n_loc, np.int32)
    thread = np.zeros(n_loc, np.int32)
    for lid in loc_ids:
        d = trace.defs.locations.get(int(lid))
        if d is not None:
            proc[lid] = d.process
            thread[lid] = d.thread
    return loc_ids, n_loc, proc, thread


def _walk_error(status, info, loc, names, etype, ea, path):
    i = int(info)
    what = {
        K.ERR_EXIT_EMPTY_STACK: "EXIT without a matching ENTER",
        K.ERR_EXIT_MISMATCH: "EXIT does not leave the innermost open region",
        K.ERR_BAD_REGION: "ENTER names an undefined region",
        K.ERR_UNKNOWN_TEAM: "a worker enters a parallel region of a team that no thread of its process forked",
    }[status]
    rid = int(ea[i])
    rname = names[rid] if rid < len(names) and names[rid] else f"region id {rid}"
    return ReplayError(f"event {i}: {what} ({rname})", path=path, location=int(loc))


def replay(trace, tables=None, jobs: int = 1, progress=None) -> AnalysisContext:
    """Replay a trace into an :class:`AnalysisContext` (see the module docstring).

    ``tables``: names of the tables to build (default: all).  ``progress``:
    optional callable ``progress(n_events_done)`` called after each location.
    """
    want = set(ALL_TABLES if tables is None else tables)
    unknown = want - set(ALL_TABLES)
    if unknown:
        raise ValueError(f"unknown replay tables {sorted(unknown)}; known: {list(ALL_TABLES)}")
    defs = trace.defs
    path = getattr(trace, "path", None)
    names, paradigm, role = region_arrays(defs)
    synthetic_region = len(names) - 1
    loc_ids, n_loc, loc_proc, loc_thread = _location_meta(trace)
    problems: list[str] = list(getattr(trace, "problems", []) or [])

    tree = CallTreeBuilder()
    team_map: dict[int, dict[int, int]] = {}  # process -> team id -> builder node at the fork
    summaries: dict[int, tuple] = {}  # loc -> (nodes, visits, incl, excl) over builder ids
    frags: dict[str, list] = {k: [] for k in ("sends", "recvs", "collectives", "forks", "joins", "members",
                                               "barriers", "locks")}
    pending = sorted((int(l) for l in loc_ids), key=lambda l: (loc_proc[l], loc_thread[l], l))
    while pending:
        deferred = []
        for loc in pending:
            proc = int(loc_proc[loc])
            ev = trace.events(loc)
            etype = np.ascontiguousarray(ev.type, np.uint8)
            ea = np.ascontiguousarray(ev.a, np.uint32)
            ec = np.ascontiguousarray(ev.c, np.uint32)
            ed = np.ascontiguousarray(ev.d, np.uint64)
            time = np.ascontiguousarray(ev.time, np.float64)
            keys, vals = _team_arrays(team_map.get(proc, {}))
            # defer a worker whose team's master has not been walked yet
            if len(etype):
                is_par = (etype == K.ENTER) & (ea < len(role))
                is_par[is_par] = role[ea[is_par].astype(np.int64)] == K.ROLE_OMP_PARALLEL
                worker = is_par & (ec != K.NO_ID) & (ed != 0) & (ed != K.NO_ID)
                needed = np.unique(ec[worker].astype(np.int64))
                if len(needed) and not np.isin(needed, keys).all():
                    deferred.append(loc)
                    continue
            res = K.walk_events(etype, ea, ec, ed, time, role, tree.parent, tree.region, tree.first_child,
                                tree.next_sibling, tree.first_visit, tree.n_nodes, keys, vals)
            (status, info, p, r, fc, ns, fv, nn, call_node, call_enter, call_exit, call_parent, call_team,
             n_calls, ev_call) = res
            tree.update(p, r, fc, ns, fv, nn)
            if status not in (K.OK, K.UNCLOSED):
                raise _walk_error(status, info, loc, names, etype, ea, path)
            if status == K.UNCLOSED:
                problems.append(f"location {loc}: {int(info)} region(s) still open at the end; "
                                f"closed at its last event")
            nc = int(n_calls)
            calls = Calls(node=call_node[:nc], region=tree.region[call_node[:nc]], enter=call_enter[:nc],
                          exit=call_exit[:nc], parent=call_parent[:nc], team=call_team[:nc])
            summaries[loc] = _summarize(calls)
            fr = extract_location(loc, proc, etype, ea, np.asarray(ev.b), ec, ed, np.asarray(ev.e),
                                  np.asarray(ev.flags), time, ev_call, calls, role)
            for k, v in fr.items():
                frags[k].append(v)
            # publish this location's forks so its team's workers can be walked
            f = fr["forks"]
            if len(f["team_id"]):
                team_map.setdefault(proc, {}).update(zip(f["team_id"].tolist(), f["fork_node"].tolist()))
            if progress is not None:
                progress(len(etype))
            del ev, etype, ea, ec, ed, time, res, calls, ev_call
        if len(deferred) == len(pending):
            loc = deferred[0]
            raise ReplayError("a worker enters a parallel region of a team that no thread of its process "
                              "forked", path=path, location=loc)
        pending = deferred

    ctree, new_id, synthesized = tree.freeze(synthetic_region)
    C = len(ctree)
    visits = np.zeros((C, n_loc), np.int64)
    incl = np.zeros((C, n_loc), np.float64)
    excl = np.zeros((C, n_loc), np.float64)
    for loc, (nodes, v, inc, exc) in summaries.items():
        ids = new_id[nodes]
        np.add.at(visits[:, loc], ids, v)
        np.add.at(incl[:, loc], ids, inc)
        np.add.at(excl[:, loc], ids, exc)

    tbl = {}
    if "messages" in want:
        tbl["messages"] = build_messages(concat(frags["sends"]), concat(frags["recvs"]), problems)
    if "collectives" in want:
        comm_size = {cid: len(c.ranks) for cid, c in defs.comms.items() if len(c.ranks)}
        tbl["collectives"] = build_collectives(concat(frags["collectives"]), comm_size, problems)
    if want & {"omp_teams", "omp_team_members", "omp_barriers"}:
        teams, members, barriers = build_omp(concat(frags["forks"]), concat(frags["joins"]),
                                             concat(frags["members"]), concat(frags["barriers"]), loc_proc,
                                             problems)
        tbl.update(omp_teams=teams, omp_team_members=members, omp_barriers=barriers)
    if "locks" in want:
        kinds = {lid: int(lk.kind) for lid, lk in defs.locks.items()}
        tbl["locks"] = build_locks(concat(frags["locks"]), loc_proc, kinds)
    for t in tbl.values():
        remap_cnodes(t, new_id)

    ctx = AnalysisContext(
        trace=trace, calltree=ctree, n_locations=n_loc, location_process=loc_proc, location_thread=loc_thread,
        region_name=names, region_paradigm=paradigm, region_role=role, visits=visits, excl_time=excl,
        incl_time=incl, tables=tbl,
    )
    ctx.problems = problems
    ctx.synthetic_root = synthesized
    return ctx


def _team_arrays(tm: dict[int, int]):
    """Sorted team ids and their fork nodes, as the walk kernel wants them."""
    if not tm:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    keys = np.fromiter(tm.keys(), np.int64, len(tm))
    vals = np.fromiter(tm.values(), np.int32, len(tm))
    o = np.argsort(keys)
    return keys[o], vals[o]


def _summarize(calls: Calls):
    """Visits, inclusive and exclusive time per builder node of one location."""
    if len(calls.node) == 0:
        z = np.zeros(0)
        return np.zeros(0, np.int64), z.astype(np.int64), z, z
    nodes, inv = np.unique(calls.node, return_inverse=True)
    dur = calls.exit - calls.enter
    visits = np.bincount(inv, minlength=len(nodes)).astype(np.int64)
    inc = np.bincount(inv, weights=dur, minlength=len(nodes))
    has_parent = calls.parent >= 0
    child_of = inv[calls.parent[has_parent]]
    exc = inc - np.bincount(child_of, weights=dur[has_parent], minlength=len(nodes))
    return nodes.astype(np.int64), visits, inc, exc
