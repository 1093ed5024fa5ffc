"""The root-cause analysis by shares (analyzer/distributed/share_backward.py, share_root_cause.py) against the
serial one: every share's delay costs and critical-path metrics in its own locations' columns, bit for bit,
for K = 1 (one share), K < processes, and K > processes (empty shares), over MemoryNetwork."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_builder

from analyzer.distributed.network import MemoryNetwork, run_stages
from analyzer.distributed.share_backward import share_backward_inputs
from analyzer.distributed.share_replay import share_stages
from analyzer.distributed.share_root_cause import share_critical_path, share_delay
from analyzer.replay import replay
from analyzer.replay.engine import partition
from patterns.backward import REQUIRES, backward_inputs
from patterns.critical_path import critical_path_profile
from patterns.kernels.delay import delay_costs

N_PROCESSES = 5
KS = (1, 2, 3, 7)


def _by_shares(trace, K):
    shares = partition(trace, K)
    net = MemoryNetwork(K)
    got = run_stages(net, share_stages(trace, shares, set(REQUIRES), compact=True))
    ctxs = {s: got[s].context for s in range(K)}
    sbs = share_backward_inputs(net, ctxs, shares)
    return ctxs, sbs, share_delay(net, sbs), share_critical_path(net, ctxs, sbs)


def _check(trace):
    ser = replay(trace, tables=set(REQUIRES))
    want_res, want_forced = delay_costs(backward_inputs(ser))
    want_cp = critical_path_profile(ser)
    assert want_res.sum() > 0 and want_cp["critical_path"].sum() > 0  # the comparisons have something to compare
    crossed = {"ghosts": 0, "links": 0}
    for K in KS:
        ctxs, sbs, delay, cp = _by_shares(trace, K)
        for s in range(K):
            own = np.asarray(ctxs[s].owned, np.int64)
            glob = sbs[s].global_location[own]
            res, forced = delay[s]
            np.testing.assert_array_equal(res[:, :, own], want_res[:, :, glob], err_msg=f"delay K={K} share {s}")
            for name, a in cp[s].items():
                np.testing.assert_array_equal(a[:, own], want_cp[name][:, glob], err_msg=f"{name} K={K} share {s}")
            if K > 1:
                crossed["ghosts"] += len(sbs[s].ghost_h)
                crossed["links"] += len(sbs[s].rl_share)
        assert sum(delay[s][1] for s in range(K)) == want_forced
    assert crossed["ghosts"] and crossed["links"]  # wait states and the path crossed shares


@pytest.mark.parametrize("seed", range(6))
def test_delay_and_critical_path_by_shares_are_the_serial_ones(seed):
    _check(random_builder(seed, N_PROCESSES, 2, 30).build())


def test_with_tasks_and_more_threads():
    _check(random_builder(11, N_PROCESSES, 3, 30, tasks=True).build())


def test_ghosts_and_emits_pair_up():
    """Every ghost point a share holds was emitted by exactly one other share, at the position it names."""
    trace = random_builder(2, N_PROCESSES, 2, 30).build()
    _, sbs, _, _ = _by_shares(trace, 3)
    for s, sb in sbs.items():
        for src in range(3):
            got = np.sort(sb.ghost_pos[sb.ghost_src == src])
            sent = np.sort(sbs[src].em_slot[sbs[src].em_dest == s])
            np.testing.assert_array_equal(got, sent)
        assert (sb.ghost_h >= 0).all()  # each ghost belongs to a handling of its share


def _crossed_late_senders():
    """Two ranks, each receiving before sending, each receive waiting for the other's send: on a consistent
    clock impossible (skewed clocks give it), the backward replay meets each causer before its waiter."""
    import tracefmt

    b = tracefmt.TraceBuilder()
    a, c = b.location(rank=0), b.location(rank=1)
    for loc in (a, c):
        b.enter(loc, 0.0, "main")
    b.enter(a, 0.0, "MPI_Recv"); b.recv(a, 6.0, source=1); b.exit(a, 6.0)
    b.enter(a, 7.0, "MPI_Send"); b.send(a, 7.0, dest=1); b.exit(a, 7.5)
    b.enter(c, 1.0, "MPI_Recv"); b.recv(c, 8.0, source=0); b.exit(c, 8.0)
    b.enter(c, 9.0, "MPI_Send"); b.send(c, 9.0, dest=0); b.exit(c, 9.5)
    for loc in (a, c):
        b.exit(loc, 10.0, "main")
    return b.build()


def test_a_cycle_of_waits_is_forced_as_serially():
    """The shares wait for each other in a cycle; the lowest location's blocked causer is forced, as the serial
    replay does: the same costs, the same count, no hang."""
    trace = _crossed_late_senders()
    ser = replay(trace, tables=set(REQUIRES))
    want_res, want_forced = delay_costs(backward_inputs(ser))
    assert want_forced >= 1
    ctxs, sbs, delay, _ = _by_shares(trace, 2)
    assert sum(len(sb.ghost_h) for sb in sbs.values()) == 2  # both pairs cross the shares
    for s in range(2):
        own = np.asarray(ctxs[s].owned, np.int64)
        np.testing.assert_array_equal(delay[s][0][:, :, own], want_res[:, :, sbs[s].global_location[own]])
    assert sum(delay[s][1] for s in range(2)) == want_forced


def test_the_pipeline_computes_them_per_share_without_gathering_tables():
    """analyze_by_shares over MemoryNetwork: every root-cause metric as the serial analysis gives it, computed on
    the shares (none left to share 0), and no table gathered to share 0."""
    from analyzer.analyze import compute_patterns, required_tables, select_patterns
    from analyzer.distributed.pipeline import RowsOnShares, analyze_by_shares
    from analyzer.distributed.share_root_cause import is_root_cause

    trace = random_builder(3, N_PROCESSES, 2, 30).build()
    pats = select_patterns(None, plugins=False)
    ser = replay(trace, tables=required_tables(pats))
    compute_patterns(ser, pats)
    names = [p.name for p in pats if is_root_cause(p)]
    assert len(names) > 30
    for K in (2, 3):
        ctx = analyze_by_shares(trace, pats, MemoryNetwork(K))
        assert ctx.tables and all(isinstance(t, RowsOnShares) for t in ctx.tables.values())  # nothing gathered
        for name in names:
            rows, data = ctx.stored_results[name]
            got = np.zeros_like(ser.results[name])
            got[rows] = data
            np.testing.assert_array_equal(got, ser.results[name], err_msg=f"{name} K={K}")
