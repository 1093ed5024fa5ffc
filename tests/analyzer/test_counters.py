"""ctx.counters (exclusive hardware-counter increments per call path and location) and the cube metrics
made from them: by hand, and against kernel_references.counter_increments_reference on random traces."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import analyze
from kernel_references import counter_increments_reference
from analyzer.replay import replay
from tracefmt.layout import MetricDtype, MetricMode


def _cnode(ctx, path):
    hits = [c for c in range(ctx.n_cnodes) if ctx.calltree.path(c, ctx.region_name) == path]
    assert len(hits) == 1, path
    return hits[0]


def hand_trace():
    """main > (work, MPI_Send) on rank 0, readings after every ENTER and EXIT:

    cycles (uint64):  main 0 .. 100; work 10 .. 70; MPI_Send 75 .. 95
      -> work 60, MPI_Send 20, main 100 - 60 - 20 = 20
    flops (double):   main 0.5 .. 8.0; work 1.0 .. 7.25 (read at ENTER and EXIT);
                      MPI_Send read only at its ENTER: no increment of its own
      -> work 6.25, main 7.5 - 6.25 = 1.25 (MPI_Send's part stays with main)
    temp (ABSOLUTE): sampled, not an increment: not in ctx.counters
    A reading after the SEND event belongs to no call boundary and is ignored.
    """
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.metric("CYCLES", dtype=MetricDtype.UINT64)
    b.metric("FLOPS", dtype=MetricDtype.DOUBLE)
    b.metric("temp", mode=MetricMode.ABSOLUTE)
    b.enter(r0, 0.0, "main"); b.counter(r0, 0.0, "CYCLES", 0); b.counter(r0, 0.0, "FLOPS", 0.5)
    b.counter(r0, 0.0, "temp", 40)
    b.enter(r0, 1.0, "work"); b.counter(r0, 1.0, "CYCLES", 10); b.counter(r0, 1.0, "FLOPS", 1.0)
    b.exit(r0, 2.0, "work"); b.counter(r0, 2.0, "CYCLES", 70); b.counter(r0, 2.0, "FLOPS", 7.25)
    b.enter(r0, 3.0, "MPI_Send"); b.counter(r0, 3.0, "CYCLES", 75); b.counter(r0, 3.0, "FLOPS", 7.5)
    b.send(r0, 3.5, dest=0, tag=1, nbytes=8); b.counter(r0, 3.5, "CYCLES", 1000)
    b.exit(r0, 4.0, "MPI_Send"); b.counter(r0, 4.0, "CYCLES", 95)
    b.exit(r0, 5.0, "main"); b.counter(r0, 5.0, "CYCLES", 100); b.counter(r0, 5.0, "FLOPS", 8.0)
    b.counter(r0, 5.0, "temp", 45)
    return b


def test_exclusive_increments_by_hand():
    ctx = replay(hand_trace().build())
    assert sorted(ctx.counters) == ["CYCLES", "FLOPS"]
    main, work, send = (_cnode(ctx, p) for p in ("main", "main/work", "main/MPI_Send"))
    cyc, flops = ctx.counters["CYCLES"], ctx.counters["FLOPS"]
    assert (cyc[main, 0], cyc[work, 0], cyc[send, 0]) == (20.0, 60.0, 20.0)
    assert (flops[main, 0], flops[work, 0], flops[send, 0]) == (1.25, 6.25, 0.0)
    assert cyc.shape == (ctx.n_cnodes, ctx.n_locations)


def test_counters_become_cube_metrics():
    cube = analyze(hand_trace().build(), patterns=["time"], plugins=False)
    by_name = {m.name: m for m in cube.metrics}
    cyc = by_name["cycles"]
    assert cyc.parent is None and cyc.unit == "occ" and cyc.dtype == "INTEGER"
    assert cyc.description == "hardware counter CYCLES as recorded"
    assert by_name["flops"].dtype == "FLOAT"
    assert "temp" not in by_name
    ctx = cube.context
    assert np.array_equal(cube.values["cycles"], ctx.counters["CYCLES"])
    assert cube.values["cycles"].sum() == 100.0


def test_no_metrics_no_counters():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.enter(r0, 0.0, "main"); b.exit(r0, 1.0, "main")
    assert replay(b.build()).counters == {}


def random_counter_trace(seed):
    """Two ranks of random nested calls with two counters read at most boundaries (some skipped)."""
    rng = random.Random(seed)
    b = tracefmt.TraceBuilder()
    b.metric("PAPI_TOT_INS"); b.metric("ENERGY", dtype=MetricDtype.DOUBLE)
    for r in range(2):
        loc = b.location(rank=r)
        t, ins, energy, stack = 0.0, 0, 0.0, []

        def read(t):
            if rng.random() < 0.9:
                b.counter(loc, t, "PAPI_TOT_INS", ins)
            if rng.random() < 0.8:
                b.counter(loc, t, "ENERGY", energy)

        b.enter(loc, t, "main"); read(t); stack.append("main")
        for _ in range(60):
            t += 1.0
            ins += rng.randint(0, 1000)
            energy += rng.random()
            if rng.random() < 0.55 and len(stack) < 6:
                name = rng.choice(["a", "b", "c"])
                b.enter(loc, t, name); stack.append(name)
            elif len(stack) > 1:
                b.exit(loc, t, stack.pop())
            else:
                continue
            read(t)
        while stack:
            t += 1.0
            ins += 7
            b.exit(loc, t, stack.pop()); read(t)
    return b.build()


@pytest.mark.parametrize("seed", range(8))
def test_matches_the_reference(seed):
    trace = random_counter_trace(seed)
    ctx = replay(trace)
    ref = counter_increments_reference(trace)
    assert sorted(ctx.counters) == sorted(ref)
    for name, want in ref.items():
        got = np.zeros_like(ctx.counters[name])
        for (path, loc), v in want.items():
            got[_cnode(ctx, "/".join(path)), loc] += v
        np.testing.assert_allclose(ctx.counters[name], got, rtol=0, atol=1e-9)


def test_counter_metrics_survive_the_cube_files(tmp_path):
    from analyzer.cube import read_cubex, write_cubex, write_json

    cube = analyze(hand_trace().build(), patterns=["time"], plugins=False)
    write_cubex(cube, tmp_path / "c.cubex")
    back = read_cubex(tmp_path / "c.cubex")
    assert np.array_equal(back.values["cycles"], cube.values["cycles"])
    assert np.array_equal(back.values["flops"], cube.values["flops"])
    write_json(cube, tmp_path / "c.json")
    assert "cycles" in (tmp_path / "c.json").read_text()
