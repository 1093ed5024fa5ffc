"""Export to the Chrome/Perfetto trace-event JSON format (chrome://tracing, ui.perfetto.dev).

One process per MPI rank (``pid`` = rank), one track per thread (``tid`` =
thread number), each region visit a complete event (``ph: "X"``, times in
microseconds), and every matched MPI message a flow arrow from the send to
the receive (``ph: "s"`` / ``"f"``).  OpenMP fork/join and lock events become
instant events on their thread so the timeline shows them.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict, deque

from .layout import EXIT_TYPES, EventType, Paradigm

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


def trace_events(trace) -> list[dict]:
    """The trace-event list of a native trace (without the surrounding object)."""
    defs = trace.defs
    out: list[dict] = []
    seen_pids = set()
    names = {rid: r.name for rid, r in defs.regions.items()}
    cats = {rid: _CATEGORY.get(r.paradigm, "other") for rid, r in defs.regions.items()}
    sends: dict[tuple, deque] = defaultdict(deque)  # channel -> (ts, pid, tid, bytes)
    recvs: list[tuple] = []  # (channel, ts, pid, tid)
    for loc in trace.location_ids.tolist():
        L = defs.locations[loc]
        pid, tid = int(L.process), int(L.thread)
        if pid not in seen_pids:
            seen_pids.add(pid)
            pname = defs.processes[pid].name if pid in defs.processes else f"rank {pid}"
            out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": pname}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": L.name or f"thread {tid}"}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        ev = trace.events(loc)
        us = ev.time * 1e6
        types = ev.type
        stack: list[tuple[int, float]] = []
        for i in range(len(ev)):
            t = int(types[i])
            ts = float(us[i])
            if t == EventType.ENTER:
                stack.append((int(ev.a[i]), ts))
            elif t in EXIT_TYPES:
                if not stack:
                    continue
                rid, t0 = stack.pop()
                e = {"ph": "X", "name": names.get(rid, f"region {rid}"), "cat": cats.get(rid, "other"),
                     "pid": pid, "tid": tid, "ts": t0, "dur": ts - t0}
                if t == EventType.MPI_COLLEXIT:
                    e["args"] = {"bytes sent": int(ev.d[i]), "bytes received": int(ev.e[i])}
                out.append(e)
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
            rid, t0 = stack.pop()
            out.append({"ph": "X", "name": names.get(rid, f"region {rid}"), "cat": cats.get(rid, "other"),
                        "pid": pid, "tid": tid, "ts": t0, "dur": float(us[-1]) - t0, "args": {"unfinished": True}})
    # messages: receives take sends of their channel in order (MPI's non-overtaking rule)
    recvs.sort(key=lambda r: r[1])
    flow = 0
    for chan, ts, pid, tid in recvs:
        q = sends.get(chan)
        if not q:
            continue
        s_ts, s_pid, s_tid, nbytes = q.popleft()
        flow += 1
        common = {"name": "message", "cat": "MPI message", "id": flow}
        out.append({**common, "ph": "s", "pid": s_pid, "tid": s_tid, "ts": s_ts,
                    "args": {"bytes": nbytes, "tag": chan[3], "to": chan[1]}})
        out.append({**common, "ph": "f", "bp": "e", "pid": pid, "tid": tid, "ts": ts})
    return out


def write_chrome(trace, path: str | os.PathLike) -> int:
    """Write ``path`` as trace-event JSON; returns the number of trace events."""
    events = trace_events(trace)
    doc = {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"source": str(getattr(trace, "path", "")), "writer": "expert-trace convert --to chrome"},
    }
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    return len(events)


__all__ = ["trace_events", "write_chrome"]
