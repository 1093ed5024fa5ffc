"""Multi-core replay (-j N): shares of whole processes, merged into exactly the serial result."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import analyze
from analyzer.cli.analyze import main
from analyzer.replay.calltree import CallTreeBuilder
from analyzer.replay import merge_trees, partition, replay, walk_order
from random_hybrid_traces import random_builder, random_trace


def _same_context(a, b):
    assert np.array_equal(a.calltree.parent, b.calltree.parent)
    assert np.array_equal(a.calltree.region, b.calltree.region)
    for f in ("visits", "excl_time", "incl_time"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f  # bit for bit, not approximately
    assert sorted(a.tables) == sorted(b.tables)
    for name, t in a.tables.items():
        u = b.tables[name]
        assert list(t) == list(u), name
        for col in t:
            assert np.array_equal(t[col], u[col], equal_nan=t[col].dtype.kind == "f"), (name, col)
    assert a.problems == b.problems


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("jobs", [2, 3, 8])
def test_jobs_give_the_serial_context(seed, jobs):
    trace = random_trace(seed, n_ranks=5, n_threads=3, steps=20)
    _same_context(replay(trace), replay(trace, jobs=jobs))


def test_jobs_give_the_serial_cube_values():
    trace = random_trace(11, n_ranks=4, n_threads=2, steps=30)
    a = analyze(trace, plugins=False)
    b = analyze(trace, plugins=False, jobs=2)
    assert a.metric_names == b.metric_names
    for m in a.metric_names:
        assert np.array_equal(np.asarray(a.values[m]), np.asarray(b.values[m])), m


def test_partition_is_contiguous_whole_processes_and_balanced():
    b = tracefmt.TraceBuilder()
    # 4 processes with 2 threads; event counts per process 2, 10, 10, 2 (ENTER/EXIT pairs)
    sizes = {0: 1, 1: 5, 2: 5, 3: 1}
    for r in range(4):
        for t in range(2):
            loc = b.location(rank=r, thread=t)
            if t == 0:
                for k in range(sizes[r]):
                    b.enter(loc, float(k), "f")
                    b.exit(loc, k + 0.5, "f")
    trace = b.build()
    order = [l for g in walk_order(trace) for l in g]
    proc = {int(l): trace.defs.locations[int(l)].process for l in trace.location_ids}
    assert [proc[l] for l in order] == [0, 0, 1, 1, 2, 2, 3, 3]
    for n in (1, 2, 3, 5):
        shares = partition(trace, n)
        assert len(shares) == n
        assert [l for s in shares for l in s] == order  # contiguous runs of the walk order
        for s in shares:  # never splits a process
            for l in s:
                assert all(m in s for m in order if proc[m] == proc[l])
    # weights 2+1+1, 10+1+1, 10+1+1, 2+1+1 (events + 1 per location): halves are processes {0,1} and {2,3}
    assert [sorted({proc[l] for l in s}) for s in partition(trace, 2)] == [[0, 1], [2, 3]]


def _builder(edges):
    """A builder from (parent, region, first_visit) rows in creation order (node 0 is the super-root)."""
    t = CallTreeBuilder()
    for p, r, fv in edges:
        n = t.n_nodes
        t.parent[n], t.region[n], t.first_visit[n] = p, r, fv
        t.n_nodes += 1
    return t


def test_merge_trees_unions_paths_and_takes_the_earliest_visit():
    a = _builder([(0, 7, 1.0), (1, 3, 2.0)])  # main(7) -> foo(3)
    b = _builder([(0, 7, 0.5), (1, 4, 1.5), (1, 3, 0.9)])  # main -> bar(4), main -> foo
    merged, maps = merge_trees([a, b])
    assert merged.n_nodes == 4
    assert merged.parent[:4].tolist() == [-1, 0, 1, 1]
    assert merged.region[:4].tolist() == [-1, 7, 3, 4]
    assert merged.first_visit[1:4].tolist() == [0.5, 0.9, 1.5]
    assert maps[0].tolist() == [0, 1, 2] and maps[1].tolist() == [0, 1, 3, 2]


def test_cli_json_identical_for_any_jobs(tmp_path):
    trace = tmp_path / "r.elg"
    random_builder(5, n_ranks=3, n_threads=2, steps=25).write(trace)
    outs = []
    for j in ("1", "2", "3"):
        js = tmp_path / f"j{j}.json"
        assert main([str(trace), "-j", j, "-q", "--no-plugins", "--json", str(js), "-o", str(tmp_path / "x.cubex")]) == 0
        outs.append(js.read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_cli_rejects_zero_jobs(tmp_path, capsys):
    trace = tmp_path / "r.elg"
    random_builder(5, n_ranks=2, n_threads=1, steps=5).write(trace)
    assert main([str(trace), "-j", "0", "-q"]) == 2
    assert "-j needs a positive number" in capsys.readouterr().err


def test_fragments_are_joined_as_concatenation_and_freed():
    from analyzer.replay.engine import _take
    from analyzer.replay.matching import concat

    rng = np.random.default_rng(5)
    pieces = [{"t": rng.random(n), "loc": np.full(n, i, np.int32)} for i, n in enumerate([3, 0, 7, 1])]
    expect = concat([dict(p) for p in pieces])
    frags = {"sends": pieces, "recvs": []}
    got = _take(frags, "sends")
    assert list(got) == list(expect)
    for k in expect:
        assert got[k].dtype == expect[k].dtype and np.array_equal(got[k], expect[k]), k
    assert "sends" not in frags and all(p == {} for p in pieces)  # nothing of the pieces is kept
    assert _take(frags, "recvs") == {} and _take(frags, "locks") == {}


@pytest.mark.parametrize("jobs", [1, 3])
def test_assembly_consumes_the_fragments_of_the_shares(jobs):
    from analyzer.replay.engine import assemble, region_arrays, walk_share

    trace = random_trace(4, n_ranks=4, n_threads=2, steps=15)
    names, _, role = region_arrays(trace.defs)
    shares = [walk_share(trace, p, role, names, timeline=True) for p in partition(trace, jobs) if p]
    ctx = assemble(trace, shares)
    assert all(s.done == {} for s in shares)
    _same_context(replay(trace), ctx)


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_table_alone_is_the_table_of_the_full_replay(jobs):
    """The walk keeps only the fragments of the wanted tables (engine.FRAGMENT_KINDS): every table, built
    alone, must come out as when all are built."""
    from analyzer.replay.engine import ALL_TABLES

    trace = random_trace(6, n_ranks=3, n_threads=3, steps=40, tasks=True, deps=True, rma=True)
    full = replay(trace, jobs=jobs)
    for name in ALL_TABLES:
        alone = replay(trace, tables=[name], jobs=jobs).tables
        a, b = full.tables[name], alone[name]
        assert len(a), name  # the trace exercises every table
        assert list(a) == list(b), name
        for col in a:
            assert np.array_equal(a[col], b[col], equal_nan=a[col].dtype.kind == "f"), (name, col)
