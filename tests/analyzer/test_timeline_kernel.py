"""The timeline kernel (cut points and per-interval times) against its slow reference, on random traces;
and the linking of the cut points to the replay tables."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

from timeline_reference import reference_timeline
from analyzer.replay import replay
from analyzer.replay.engine import region_arrays, walk_order, walk_share


def _path(tree, node):
    out = []
    while node > 0:
        out.append(int(tree.region[node]))
        node = int(tree.parent[node])
    return tuple(reversed(out))


@pytest.mark.parametrize("seed", range(8))
def test_timeline_kernel_matches_reference(seed):
    trace = random_trace(seed, n_ranks=2 + seed % 3, n_threads=1 + seed % 3, steps=15 + seed)
    names, _, role = region_arrays(trace.defs)
    locs = [l for g in walk_order(trace) for l in g]
    share = walk_share(trace, locs, role, names, timeline=True)
    assert share.error is None
    forks = {}
    for loc in locs:
        cuts, intervals = reference_timeline(trace, loc, forks)
        fr = share.done[loc][1]
        assert list(zip(fr["cuts"]["kind"].tolist(), fr["cuts"]["event"].tolist())) == cuts
        seg = fr["segments"]
        got = {}
        for j, node, t in zip(seg["cut"], seg["cnode"], seg["time"]):
            got.setdefault(int(j), {}).setdefault(_path(share.tree, int(node)), 0.0)
            got[int(j)][_path(share.tree, int(node))] += float(t)
        assert got.keys() == intervals.keys()
        for j in got:
            assert got[j].keys() == intervals[j].keys()
            for p in got[j]:
                assert got[j][p] == pytest.approx(intervals[j][p], abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_sync_points_link_to_their_rows(seed):
    ctx = replay(random_trace(seed, n_ranks=3, n_threads=2, steps=25), tables=["sync_points"])
    P, M, C = ctx.tables["sync_points"], ctx.tables["messages"], ctx.tables["collectives"]
    B, T = ctx.tables["omp_barriers"], ctx.tables["omp_teams"]
    assert (np.diff(P["cut"])[np.diff(P["loc"]) == 0] == 1).all()  # numbered 1, 2, ... per location
    linked = P["row"] >= 0
    assert linked[np.isin(P["kind"], [1, 3, 5, 8, 9, 10])].all()
    for k, table, loc_col, time_col in ((1, M, "send_loc", "send_time"), (3, M, "recv_loc", "recv_time"),
                                         (5, C, "loc", "exit"), (9, B, "loc", "exit"), (10, T, "master_loc", "join_time")):
        s = P["kind"] == k
        assert (table[loc_col][P["row"][s]] == P["loc"][s]).all()
        assert np.array_equal(table[time_col][P["row"][s]], P["time"][s])
    # every message has its send and its receive point
    assert sorted(P["row"][P["kind"] == 1].tolist()) == list(range(len(M)))
    assert sorted(P["row"][P["kind"] == 3].tolist()) == list(range(len(M)))


def test_the_time_maps_add_up_to_the_exclusive_time_on_masters():
    """With one thread per process the time maps hold all the time of a location: the exclusive time, with
    the fork and join spans moved from the caller to the parallel region (as Scalasca's time and ours do)."""
    ctx = replay(random_trace(3, n_ranks=3, n_threads=1, steps=30), tables=["time_segments"])
    S = ctx.tables["time_segments"]
    tot = np.zeros_like(ctx.excl_time)
    np.add.at(tot, (S["cnode"], S["loc"]), S["time"])
    assert np.allclose(tot.sum(axis=0), ctx.excl_time.sum(axis=0), atol=1e-9)
    par = np.isin(ctx.region_role[ctx.calltree.region], [30])  # parallel regions gain the fork/join spans
    assert np.allclose(tot[~par & ~np.isin(np.arange(ctx.n_cnodes), ctx.calltree.parent[par])],
                       ctx.excl_time[~par & ~np.isin(np.arange(ctx.n_cnodes), ctx.calltree.parent[par])], atol=1e-9)
