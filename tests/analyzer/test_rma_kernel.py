"""The MPI one-sided event kernel (``events_in_calls`` of analyzer/replay/kernels/enclosing.py with the one-sided types) against its slow reference on random nestings,
and the ``mpi_rma_ops`` table the replay builds from it against a walk of the events."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.replay import replay
from analyzer.replay.extract import RMA_TYPES
from analyzer.replay.kernels.enclosing import events_in_calls
from random_hybrid_traces import random_trace
from tracefmt.columns import event_columns
from tracefmt.layout import NO_ID, EventType as E
from tracefmt.layout import RmaAtomic, RmaSync

RMA = (E.MPI_RMA_PUT, E.MPI_RMA_GET, E.MPI_RMA_ATOMIC, E.MPI_RMA_SYNC)


def rma_rows_reference(ev) -> tuple[list, list]:
    """Slow counterpart of ``events_in_calls`` with ``RMA_TYPES``: (event index, call index in ENTER order of the innermost open call or
    -1) per MPI_RMA_* event."""
    event, call = [], []
    stack, entered = [], 0
    for i in range(len(ev)):
        t = int(ev.type[i])
        if t == E.ENTER:
            stack.append(entered)
            entered += 1
        elif t in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
            if stack:
                stack.pop()
        elif t in RMA:
            event.append(i)
            call.append(stack[-1] if stack else -1)
    return event, call


def random_location_trace(seed: int):
    """One location: random nesting of regions, RMA events of every type at random depths (also outside every
    call: the kernel must not care whether the trace is valid)."""
    rng = np.random.default_rng(seed)
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    w = b.window()
    b.rma_put(loc, 0.5, w, 0, 8)  # before every call
    t, open_regions = 1.0, []
    for _ in range(200):
        t += 1.0
        r = rng.random()
        if r < 0.35 or not open_regions and r < 0.7:
            name = str(rng.choice(["MPI_Put", "MPI_Win_fence", "MPI_Get", "work"]))
            b.enter(loc, t, name)
            open_regions.append(name)
        elif r < 0.7:
            b.exit(loc, t, open_regions.pop())
        else:
            k = int(rng.integers(0, 4))
            if k == 0:
                b.rma_put(loc, t, w, 0, int(rng.integers(0, 1 << 40)))
            elif k == 1:
                b.rma_get(loc, t, w, 0, 8)
            elif k == 2:
                b.rma_atomic(loc, t, w, 0, RmaAtomic.FETCH_AND_OP, 8, 8)
            else:
                b.rma_sync(loc, t, w, RmaSync.FENCE)
    while open_regions:
        t += 1.0
        b.exit(loc, t, open_regions.pop())
    return b.build()


@pytest.mark.parametrize("seed", range(8))
def test_kernel_matches_reference(seed):
    trace = random_location_trace(seed)
    ev = trace.events(int(trace.location_ids[0]))
    cols = event_columns(ev)
    got = events_in_calls(cols.type, RMA_TYPES, int((ev.type == E.ENTER).sum()))
    want = rma_rows_reference(ev)
    assert len(want[0]) > 0 and -1 in want[1]
    for g, w in zip(got, want):
        assert np.array_equal(g, np.asarray(w, g.dtype))


def table_reference(trace):
    """Per RMA event of every location: (loc, region of the innermost open call, its enter and exit times, event
    type, kind, window, peer, sent, received), from a walk with a stack."""
    rows = []
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        stack, pending = [], []
        for i in range(len(ev)):
            t = int(ev.type[i])
            if t == E.ENTER:
                stack.append([int(ev.a[i]), float(ev.time[i]), None])
            elif t in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
                stack.pop()[2] = float(ev.time[i])
            elif t in RMA:
                d, e, c = int(ev.d[i]), int(ev.e[i]), int(ev.c[i])
                sent = {E.MPI_RMA_PUT: d, E.MPI_RMA_ATOMIC: d}.get(t, 0)
                recvd = {E.MPI_RMA_GET: d, E.MPI_RMA_ATOMIC: e}.get(t, 0)
                peer = -1 if int(ev.b[i]) == NO_ID else int(ev.b[i])
                kind = c if t in (E.MPI_RMA_SYNC, E.MPI_RMA_ATOMIC) else 0
                pending.append((stack[-1], (t, kind, int(ev.a[i]), peer, sent, recvd)))
        for call, fields in pending:
            rows.append((loc, trace.defs.regions[call[0]].name, call[1], call[2], *fields))
    return sorted(rows)


@pytest.mark.parametrize("seed", [2, 4, 11])
def test_table_matches_a_walk_of_the_events(seed):
    trace = random_trace(seed, n_ranks=3, n_threads=2, steps=40, tasks=True, rma=True)
    ctx = replay(trace)
    T = ctx.tables["mpi_rma_ops"]
    got = sorted((int(T["loc"][i]), ctx.region_name[ctx.calltree.region[T["cnode"][i]]], float(T["enter"][i]),
                  float(T["exit"][i]), int(T["op"][i]), int(T["kind"][i]), int(T["window"][i]), int(T["peer"][i]),
                  int(T["sent"][i]), int(T["recvd"][i])) for i in range(len(T)))
    want = table_reference(trace)
    assert len(want) > 0 and got == want
    assert (T["rank"] == np.array([trace.defs.locations[int(l)].process for l in T["loc"]])).all()
