"""The timeline of an analysis as Chrome/Perfetto trace-event JSON: the trace, its wait states and their causes.

The trace's own events come from ``tracefmt.chrome`` (one process per rank, one track per thread,
regions as slices, messages as arrows).  This module adds, from an analysis context:

* one slice per wait-state instance (``analyzer.timeline.waits``), named by its property, on the
  waiting thread's track, nested in the call that waited.  Where it cannot nest there (a region
  begins or ends inside the waiting interval: OpenMP tasks run in a barrier, a completion nested in
  an ``MPI_Waitall``) it goes on a track of its own beside the thread, "<thread> waits";
* one flow arrow per wait whose cause is known, from the cause location to the wait slice, at the
  time of the causing event.  Perfetto binds a flow event to the slice last begun on its track, so
  the arrow leaves from the slice the causing event begins (the late send call, the last arrival's
  barrier, the root's broadcast, the holder's "release lock" or the master's "fork" instant) or,
  where the cause is the end of a call, from that call; it ends in the wait slice (a slice that
  begins on the waiting track at that very time is put after the arrow, ``tracefmt.chrome.ordered``);
* the critical path (``analyzer.timeline.critical``) as a track "critical path" at the top of each
  process, one slice per piece the path spends on one of its threads.

Trace-event rules this keeps (checked in tests/reports by a structural validator that also mimics
Perfetto's binding): microseconds rounded to whole nanoseconds, slices properly nested per track,
every flow start and end within a slice of its track, the start no later than the end, and the file
in time order.
"""

from __future__ import annotations

import numpy as np

from tracefmt.chrome import trace_events, write_trace_events
from tracefmt.names import escape_bytes

from .critical import critical_path_pieces
from .waits import wait_states

__all__ = ["timeline_events", "write_timeline", "WAIT_TRACK_OFFSET", "PATH_TID"]

#: tid of the track that carries a thread's waits when they cannot nest on the thread's own track
WAIT_TRACK_OFFSET = 1_000_000
#: tid of the critical-path track of each process
PATH_TID = 2_000_000


def _ns(seconds) -> int:
    return int(round(float(seconds) * 1e9))


def _us(ns: int) -> float:
    return ns / 1e3


class _Track:
    """The region slices of one thread track as sorted nanosecond boundaries, for nesting and binding tests
    (each method takes and returns arrays: one call per track)."""

    def __init__(self, starts: list[int], ends: list[int]):
        self.starts = np.sort(np.asarray(starts, np.int64))
        self.ends = np.sort(np.asarray(ends, np.int64))
        self.bounds = np.unique(np.concatenate([self.starts, self.ends]))

    def snap(self, x: np.ndarray) -> np.ndarray:
        """Each ``x`` moved onto a slice boundary less than 3 ns away (rounding), else kept."""
        if not len(self.bounds):
            return x
        k = np.searchsorted(self.bounds, x)
        lo = self.bounds[np.maximum(k - 1, 0)]
        hi = self.bounds[np.minimum(k, len(self.bounds) - 1)]
        x = np.where(np.abs(hi - x) < 3, hi, x)
        return np.where(np.abs(lo - x) < 3, lo, x)

    def fits(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """No slice begins or ends strictly inside (a, b): a slice [a, b] nests here."""
        return np.searchsorted(self.bounds, b, "left") - np.searchsorted(self.bounds, a, "right") <= 0

    def covered(self, x: np.ndarray) -> np.ndarray:
        """Some slice contains ``x`` (start <= x <= end)."""
        return np.searchsorted(self.starts, x, "right") - np.searchsorted(self.ends, x, "left") > 0


def _groups(keys: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(key, indices) for each distinct key."""
    if not len(keys):
        return []
    order = np.argsort(keys, kind="stable")
    uniq, first = np.unique(keys[order], return_index=True)
    return list(zip(uniq.tolist(), np.split(order, first[1:])))


def _location_tracks(trace) -> tuple[dict[int, tuple[int, int]], dict[int, str]]:
    defs = trace.defs
    where, names = {}, {}
    for loc in trace.location_ids.tolist():
        L = defs.locations[loc]
        where[loc] = (int(L.process), int(L.thread))
        names[loc] = f"rank {int(L.process)} thread {int(L.thread)}"
    return where, names


def timeline_events(ctx) -> tuple[list[dict], dict]:
    """The trace events of the timeline of ``ctx`` (an ``AnalysisContext`` with its trace) and a summary
    (``otherData`` of the file: counts, what was left out)."""
    trace = ctx.trace
    events = trace_events(trace)
    where, loc_name = _location_tracks(trace)
    slices: dict[tuple[int, int], tuple[list, list]] = {}
    thread_names: dict[tuple[int, int], str] = {}
    for e in events:
        if e["ph"] == "X":
            a = _ns(e["ts"] * 1e-6)
            s = slices.setdefault((e["pid"], e["tid"]), ([], []))
            s[0].append(a)
            s[1].append(a + _ns(e["dur"] * 1e-6))
        elif e["ph"] == "M" and e["name"] == "thread_name":
            thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
    tracks = {k: _Track(*v) for k, v in slices.items()}
    empty = _Track([], [])
    paths: dict[int, str] = {}

    def callpath(c: int) -> str:
        if c not in paths:
            paths[c] = escape_bytes(ctx.calltree.path(int(c), ctx.region_name)) if c >= 0 else "?"
        return paths[c]

    waits = wait_states(ctx)
    extra: list[dict] = []
    flow_id = 1 + max((int(e["id"]) for e in events if e["ph"] in "sf" and isinstance(e.get("id"), int)), default=0)
    L = max(where, default=-1) + 1
    track_pid, track_tid = np.full(L + 1, -1, np.int64), np.full(L + 1, -1, np.int64)
    for loc, (pid, tid) in where.items():
        track_pid[loc], track_tid[loc] = pid, tid
    loc = np.where((waits.loc >= 0) & (waits.loc < L), waits.loc, L)  # L: a location the trace lacks
    a = np.round(waits.start * 1e9).astype(np.int64)
    b = np.round(waits.end * 1e9).astype(np.int64)
    aside = np.zeros(len(waits), bool)
    for l, idx in _groups(loc):
        tr = tracks.get((int(track_pid[l]), int(track_tid[l])), empty)
        a[idx], b[idx] = tr.snap(a[idx]), tr.snap(b[idx])
        b[idx] = np.maximum(a[idx], b[idx])
        aside[idx] = ~tr.fits(a[idx], b[idx])
    tid = np.where(aside, WAIT_TRACK_OFFSET + track_tid[loc], track_tid[loc])
    # the arrow: at the cause, in the wait slice (or at its nearer end), starting no later than it ends
    cl = np.where((waits.cause_loc >= 0) & (waits.cause_loc < L), waits.cause_loc, L)
    known = (cl < L) & np.isfinite(waits.cause_time) & (b - a >= 2) & (track_pid[cl] >= 0)
    c = np.round(np.where(known, waits.cause_time, 0.0) * 1e9).astype(np.int64)
    f = np.minimum(np.maximum(c, a + 1), b)
    s = np.minimum(c, f)
    for l, idx in _groups(np.where(known, cl, L)):
        if l < L:  # the cause location must be in some slice then: the arrow starts from it
            known[idx] &= tracks.get((int(track_pid[l]), int(track_tid[l])), empty).covered(s[idx])
    n_flows = 0
    # plain lists: the loop below builds one dict per event and numpy's scalar access would dominate it
    cols = [x.tolist() for x in (loc, cl, tid, a, b, s, f, known, waits.cnode, waits.seconds, waits.cause_time)]
    pids, tids, names = track_pid.tolist(), track_tid.tolist(), loc_name
    for k, (w, cw, wt, ak, bk, sk, fk, kn, cn, sec, ct) in enumerate(zip(*cols)):
        if w == L:
            continue
        prop = waits.prop[k]
        args = {"property": prop, "call path": callpath(cn), "seconds": sec, "location": names[w],
                "cause": waits.cause[k]}
        if cw < L and ct == ct:
            args["cause location"] = names[cw]
            args["cause time (s)"] = ct
        extra.append({"ph": "X", "name": prop, "cat": "wait state", "pid": pids[w], "tid": wt, "ts": _us(ak),
                      "dur": _us(bk - ak), "cname": "terrible", "args": args})
        if kn:
            common = {"name": prop, "cat": "wait cause", "id": flow_id}
            extra.append({**common, "ph": "s", "pid": pids[cw], "tid": tids[cw], "ts": _us(sk)})
            extra.append({**common, "ph": "f", "bp": "e", "pid": pids[w], "tid": wt, "ts": _us(fk)})
            flow_id += 1
            n_flows += 1
    own_track = {(int(track_pid[l]), int(WAIT_TRACK_OFFSET + track_tid[l])) for l in np.unique(loc[aside])}
    n_aside = int(aside.sum())
    for pid, tid in sorted(own_track):
        base = tid - WAIT_TRACK_OFFSET
        extra.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                      "args": {"name": f"{thread_names.get((pid, base), f'thread {base}')} waits"}})
        extra.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                      "args": {"sort_index": 2 * base + 1}})
    path_seconds = _critical_path(ctx, trace, where, loc_name, extra)
    summary = {"writer": "expert-analyze --timeline", "source": str(getattr(trace, "path", "")),
               "wait states": len(waits), "wait states on their own track": n_aside, "cause arrows": n_flows,
               "critical path pieces (s)": path_seconds if path_seconds is not None else "n/a"}
    if waits.left_out:
        summary["left out"] = [f"{p}: {why}" for p, why in waits.left_out]
    if path_seconds is None:
        summary.setdefault("left out", []).append("critical path: the replay did not build its tables "
                                                  "(not asked for by --patterns)")
    return events + extra, summary


def _critical_path(ctx, trace, where, loc_name, extra: list[dict]) -> float | None:
    """Add the critical-path tracks to ``extra``; the path's length in seconds (None: not computed)."""
    times: dict[int, tuple[float, float]] = {}

    def span(loc: int) -> tuple[float, float]:
        if loc not in times:
            t = trace.events(loc).time
            times[loc] = (float(t[0]), float(t[-1])) if len(t) else (0.0, 0.0)
        return times[loc]

    pieces = critical_path_pieces(ctx, lambda l: span(l)[0], lambda l: span(l)[1])
    if pieces is None:
        return None
    seen: set[int] = set()
    later_start = None  # the path runs backwards: each piece ends where the later one begins, at the latest
    total = 0.0
    for loc, t0, t1 in pieces:
        if loc not in where:
            continue
        pid, _ = where[loc]
        a, b = _ns(t0), _ns(t1)
        if later_start is not None:
            b = min(b, later_start)
        a = min(a, b)
        later_start = a
        total += t1 - t0
        if pid not in seen:
            seen.add(pid)
            extra.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": PATH_TID,
                          "args": {"name": "critical path"}})
            extra.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": PATH_TID,
                          "args": {"sort_index": -1}})
        extra.append({"ph": "X", "name": f"critical path: {loc_name[loc]}", "cat": "critical path", "pid": pid,
                      "tid": PATH_TID, "ts": _us(a), "dur": _us(b - a), "cname": "good",
                      "args": {"location": loc_name[loc], "from (s)": t0, "to (s)": t1, "seconds": t1 - t0}})
    return total


def write_timeline(ctx, path) -> dict:
    """Write the timeline of ``ctx`` to ``path``; returns its summary (see :func:`timeline_events`)."""
    events, summary = timeline_events(ctx)
    write_trace_events(events, path, summary)
    return summary
