"""Hostile but well-formed ``.elg`` traces: a small valid trace with one definition field set to an extreme.

``small_builder()`` is a two-rank trace (regions, a message, a barrier);
``hostile_bytes(kind, value)`` writes it with one id, count or rate changed
consistently in the definitions and the events that refer to it, so the file
passes every checksum and only the value is hostile (issue 18, item 3; issue 13, item 4).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import tracefmt
from tracefmt.definitions import Clock, Offset, Region
from tracefmt.layout import EventType
from tracefmt.writer import to_bytes


def small_builder(repeats: int = 5) -> tracefmt.TraceBuilder:
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    for loc in (r0, r1):
        b.enter(loc, 0.0, "main")
        for k in range(repeats):
            b.enter(loc, 0.1 + k, "work")
            b.exit(loc, 0.5 + k)
    b.enter(r0, 6.0, "MPI_Send")
    b.send(r0, 6.0, dest=1, nbytes=4)
    b.exit(r0, 6.1)
    b.enter(r1, 6.0, "MPI_Recv")
    b.recv(r1, 6.2, source=0, nbytes=4)
    b.exit(r1, 6.3)
    b.collective(r0, 6.5, 7.0, "MPI_Barrier")
    b.collective(r1, 6.6, 7.0, "MPI_Barrier")
    b.counter(r0, 7.0, "PAPI_TOT_INS", 100)
    b.exit(r0, 8.0)
    b.exit(r1, 8.0)
    return b


def _relocate(d, ev, new):
    loc = d.locations.pop(1)
    d.locations[new] = dataclasses.replace(loc, id=new)
    ev[new] = ev.pop(1)


def _reprocess(d, ev, new):
    p = d.processes.pop(1)
    d.processes[new] = dataclasses.replace(p, id=new)
    d.clocks.pop(1, None)
    d.clocks[new] = Clock(new, 1e9, 0)
    d.locations[1] = dataclasses.replace(d.locations[1], process=new)
    for gid, g in list(d.groups.items()):
        d.groups[gid] = tuple(new if r == 1 else r for r in g)
    for cid, c in list(d.comms.items()):
        d.comms[cid] = dataclasses.replace(c, ranks=tuple(new if r == 1 else r for r in c.ranks))
    e = ev[0]  # rank 0 sends to rank 1
    e["a"][e["type"] == EventType.MPI_SEND] = new


def _rethread(d, ev, new):
    d.locations[1] = dataclasses.replace(d.locations[1], thread=new)


def _reregion(d, ev, new):
    rid = d.region_id("work")
    r = d.regions.pop(rid)
    d.regions[new] = dataclasses.replace(r, id=new)
    for e in ev.values():
        m = np.isin(e["type"], [EventType.ENTER, EventType.EXIT]) & (e["a"] == rid)
        e["a"][m] = new


def _unused_region(d, ev, new):
    d.regions[new] = Region(new, "unused")


def _remetric(d, ev, new):
    m = d.metrics.pop(0)
    d.metrics[new] = dataclasses.replace(m, id=new)
    e = ev[0]
    e["a"][e["type"] == EventType.COUNTER] = new


def _rate(d, ev, rate):
    for p in list(d.clocks):
        d.clocks[p] = Clock(p, rate, 0)


def _offset(d, ev, value):
    d.offsets[1] = [Offset(0.0, value), Offset(10.0, value)]


def _drift(d, ev, value):
    d.offsets[1] = [Offset(0.0, 0.0), Offset(10.0, 10.0 * value)]


#: kind -> how the value is planted
KINDS = {
    "location": _relocate,
    "process": _reprocess,
    "thread": _rethread,
    "region": _reregion,
    "unused_region": _unused_region,
    "metric": _remetric,
    "tick_rate": _rate,
    "offset": _offset,
    "drift": _drift,
}


def hostile_bytes(kind: str, value) -> bytes:
    """The small trace with ``value`` planted as ``kind`` (a key of :data:`KINDS`)."""
    b = small_builder()
    d = b.definitions()
    ev = {loc: b.records(loc) for loc in sorted(d.locations)}
    KINDS[kind](d, ev, value)
    return to_bytes(d, ev)
