"""Export to the Chrome/Perfetto trace-event JSON format (chrome://tracing, ui.perfetto.dev).

One process per MPI rank (``pid`` = rank), one track per thread (``tid`` =
thread number), each region visit a complete event (``ph: "X"``, times in
microseconds), and every matched MPI message a flow arrow from the send to
the receive (``ph: "s"`` / ``"f"``; none for a message received before it was sent, by clocks out of
step: the format cannot draw an arrow back in time).  OpenMP fork/join and lock events become
instant events on their thread so the timeline shows them.  Threads sort by twice their number,
which leaves the odd places for tracks a caller adds next to a thread.

Times are microseconds rounded to whole nanoseconds (Perfetto keeps nanoseconds), each slice's end
rounded the same way as its start so that nesting survives the rounding.  The file lists the
metadata first and then every event in time order (:func:`ordered`), so ``ts`` never goes back on
a track.  ``write_chrome(trace, path, extra=...)`` adds events built elsewhere (the analyzer's
wait states and critical path, ``analyzer.timeline``) to the trace's own.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict, deque

import numpy as np

from .layout import EXIT_TYPES, EventType, Paradigm
from .names import escape_bytes

_CATEGORY = {
    Paradigm.MPI: "MPI",
    Paradigm.OPENMP: "OpenMP",
    Paradigm.USER: "user",
    Paradigm.COMPILER: "function",
    Paradigm.MEASUREMENT: "measurement",
}
_INSTANTS = {
    EventType.OMP_FORK: "fork",
    EventType.OMP_JOIN: "join",
    EventType.OMP_ACQUIRE_LOCK: "acquire lock",
    EventType.OMP_RELEASE_LOCK: "release lock",
}


def usec(seconds) -> float:
    """Seconds as microseconds rounded to whole nanoseconds."""
    return round(float(seconds) * 1e9) / 1e3


def _span(t0: float, t1: float) -> float:
    """t1 - t0 of two rounded times, itself rounded to whole nanoseconds."""
    return round((t1 - t0) * 1e3) / 1e3


def trace_events(trace) -> list[dict]:
    """The trace-event list of a native trace (without the surrounding object)."""
    defs = trace.defs
    out: list[dict] = []
    seen_pids = set()
    names = {rid: escape_bytes(r.name) for rid, r in defs.regions.items()}  # JSON strings must be UTF-8
    cats = {rid: _CATEGORY.get(r.paradigm, "other") for rid, r in defs.regions.items()}
    sends: dict[tuple, deque] = defaultdict(deque)  # channel -> (ts, pid, tid, bytes)
    recvs: list[tuple] = []  # (channel, ts, pid, tid)
    for loc in trace.location_ids.tolist():
        L = defs.locations[loc]
        pid, tid = int(L.process), int(L.thread)
        if pid not in seen_pids:
            seen_pids.add(pid)
            pname = escape_bytes(defs.processes[pid].name) if pid in defs.processes else f"rank {pid}"
            out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": pname}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": escape_bytes(L.name) if L.name else f"thread {tid}"}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": 2 * tid}})
        ev = trace.events(loc)
        us = np.round(ev.time * 1e9) / 1e3
        types = ev.type
        # a slice takes its place in the list at its ENTER, so that of two with the same start and end the
        # caller comes first (and stays the parent)
        stack: list[tuple[int, float, int]] = []
        for i in range(len(ev)):
            t = int(types[i])
            ts = float(us[i])
            if t == EventType.ENTER:
                stack.append((int(ev.a[i]), ts, len(out)))
                out.append(None)
            elif t in EXIT_TYPES:
                if not stack:
                    continue
                rid, t0, at = stack.pop()
                e = {"ph": "X", "name": names.get(rid, f"region {rid}"), "cat": cats.get(rid, "other"),
                     "pid": pid, "tid": tid, "ts": t0, "dur": _span(t0, ts)}
                if t == EventType.MPI_COLLEXIT:
                    e["args"] = {"bytes sent": int(ev.d[i]), "bytes received": int(ev.e[i])}
                out[at] = e
            elif t == EventType.MPI_SEND:
                sends[(pid, int(ev.a[i]), int(ev.b[i]), int(ev.c[i]))].append((ts, pid, tid, int(ev.d[i])))
            elif t == EventType.MPI_RECV:
                recvs.append(((int(ev.a[i]), pid, int(ev.b[i]), int(ev.c[i])), ts, pid, tid))
            elif t in _INSTANTS:
                args = {"team": int(ev.a[i]), "size": int(ev.c[i])} if t in (EventType.OMP_FORK, EventType.OMP_JOIN) \
                    else {"lock": int(ev.a[i]), "order": int(ev.d[i])}
                out.append({"ph": "i", "s": "t", "name": _INSTANTS[t], "cat": "OpenMP", "pid": pid, "tid": tid,
                            "ts": ts, "args": args})
        # regions still open at the end of the location (a truncated trace) end at its last event
        while stack:
            rid, t0, at = stack.pop()
            out[at] = {"ph": "X", "name": names.get(rid, f"region {rid}"), "cat": cats.get(rid, "other"),
                       "pid": pid, "tid": tid, "ts": t0, "dur": _span(t0, float(us[-1])), "args": {"unfinished": True}}
    # messages: receives take sends of their channel in order (MPI's non-overtaking rule)
    recvs.sort(key=lambda r: r[1])
    flow = 0
    for chan, ts, pid, tid in recvs:
        q = sends.get(chan)
        if not q:
            continue
        s_ts, s_pid, s_tid, nbytes = q.popleft()
        if ts < s_ts:  # received before it was sent (clocks out of step): an arrow cannot point back in time
            continue
        flow += 1
        common = {"name": "message", "cat": "MPI message", "id": flow}
        out.append({**common, "ph": "s", "pid": s_pid, "tid": s_tid, "ts": s_ts,
                    "args": {"bytes": nbytes, "tag": chan[3], "to": chan[1]}})
        out.append({**common, "ph": "f", "bp": "e", "pid": pid, "tid": tid, "ts": ts})
    return out


#: order of events that share a timestamp: slices (longest first, so a parent precedes its child), thread
#: instants, flow starts, flow ends.  Perfetto binds a flow event to the slice on top of its track as the
#: events before it left it, so a flow starting at a call's ENTER leaves from that call.
_PHASE_ORDER = {"X": 0, "B": 0, "E": 0, "i": 1, "I": 1, "s": 2, "t": 3, "f": 4}
_AFTER_FLOW_ENDS = 5


def ordered(events: list[dict]) -> list[dict]:
    """Metadata first, then the rest by time (stable: equal events keep their order).

    A slice or instant that begins on a track at the very time a flow ends there comes after that flow
    end, so the flow binds to what was open before (the wait that ends then), not to what begins.
    """
    meta = [e for e in events if e["ph"] == "M"]
    rest = [e for e in events if e["ph"] != "M"]
    ends = {(e["pid"], e["tid"], e["ts"]) for e in rest if e["ph"] == "f"}

    def key(e):
        rank = _PHASE_ORDER.get(e["ph"], 6)
        if rank < 2 and ends and (e["pid"], e.get("tid"), e["ts"]) in ends:
            rank = _AFTER_FLOW_ENDS
        return e["ts"], rank, -e.get("dur", 0.0)

    rest.sort(key=key)
    return meta + rest


def write_chrome(trace, path: str | os.PathLike, extra: list[dict] | None = None,
                 other_data: dict | None = None) -> int:
    """Write ``path`` as trace-event JSON: the trace's events plus ``extra`` (trace events built by the
    caller, in the same time base: :func:`usec`); returns the number of trace events."""
    other = {"source": str(getattr(trace, "path", "")), "writer": "expert-trace convert --to chrome"}
    return write_trace_events(trace_events(trace) + list(extra or ()), path, {**other, **(other_data or {})})


def write_trace_events(events: list[dict], path: str | os.PathLike, other_data: dict | None = None) -> int:
    """Write a complete event list (metadata, slices, flows, in any order) as trace-event JSON."""
    events = ordered(events)
    dumps = json.JSONEncoder(separators=(",", ":")).encode  # the C encoder (json.dump would stream in Python)
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        for k in range(0, len(events), 20000):  # in pieces: the whole text of a large trace need not fit in memory
            f.write(("," if k else "") + dumps(events[k:k + 20000])[1:-1])
        f.write(f'],"displayTimeUnit":"ns","otherData":{dumps(other_data or {})}}}')
    return len(events)


__all__ = ["ordered", "trace_events", "usec", "write_chrome", "write_trace_events"]
