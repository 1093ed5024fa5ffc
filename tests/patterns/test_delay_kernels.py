"""The delay costs' numba backward replay against its slow reference, on random traces."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

import backward_reference as ref
from analyzer import analyze
from patterns.delay import PATTERNS
from patterns.kernels.delay import delay_costs

DELAY = [p.name for p in PATTERNS]


@pytest.mark.parametrize("seed", range(10))
def test_delay_kernel_matches_reference(seed):
    _, inp = ref.random_inputs(seed)
    res, forced = delay_costs(inp)
    assert forced == 0
    mine = {(int(m), int(c), int(l)): float(res[m, c, l]) for m, c, l in zip(*np.nonzero(res))}
    expected = ref.Delay(inp).run()
    ref.assert_close({k: v for k, v in mine.items() if v}, {k: v for k, v in expected.items() if v})


def test_random_traces_exercise_the_delay_kinds():
    """Across the seeds, short-term and long-term costs of point-to-point, collective and OpenMP waits appear."""
    seen = set()
    for seed in range(10):
        _, inp = ref.random_inputs(seed)
        res, _ = delay_costs(inp)
        seen |= {int(m) for m in np.flatnonzero((res > 0).any(axis=(1, 2)))}
    assert {0, 2, 3, 6, 7} <= seen  # latesender, barrier, n2n, ompbarrier, ompidle
    assert any(m >= 8 for m in seen)  # some long-term cost


@pytest.mark.parametrize("seed", range(3))
def test_parallel_replay_identical_on_random_traces(seed):
    trace = random_trace(seed, n_ranks=4, n_threads=2, steps=30)
    a = analyze(trace, plugins=False, patterns=DELAY)
    b = analyze(trace, plugins=False, patterns=DELAY, jobs=2)
    for m in a.metric_names:
        assert np.array_equal(a.values[m], b.values[m]), m


@pytest.mark.parametrize("seed", range(3))
def test_costs_are_stored_for_waiting_points_only(seed):
    """A row of costs for each point that waits (no other point is given costs), one zero row for the rest, and the
    costs read back by point are the reference's stored costs after the replay; a snapshot row for each
    point-to-point handling only."""
    from patterns.kernels.delay import H_P2P, DelayState, _replay

    _, inp = ref.random_inputs(seed)
    st = DelayState(inp)
    waits = inp.sp_wait > 0
    assert st.cost.shape[0] == int(waits.sum()) + 1
    assert (st.crow[~waits] == st.cost.shape[0] - 1).all()
    assert sorted(st.crow[waits].tolist()) == list(range(int(waits.sum())))
    assert st.snap.shape[0] == int((inp.h_kind == H_P2P).sum())  # point-to-point handlings come first: a row each
    no = np.zeros(0, np.int64)
    n_sp = inp.sp_i.shape[0]
    left, *_ = _replay(inp, *st.arrays(), n_sp, (np.zeros(1, np.int64), no, np.zeros(0)), no, no,
                       np.zeros((0, 8)), -1, no)
    assert left == 0
    assert not st.cost[-1].any()  # the shared zero row was never written
    assert st.costs_of(np.flatnonzero(~waits)).sum() == 0
    expected = ref.Delay(inp)
    expected.run()
    mine = {(int(p), int(k)): float(v) for p, row in enumerate(st.costs_of(np.arange(n_sp))) for k, v in enumerate(row)}
    ref.assert_close({k: v for k, v in mine.items() if v}, {k: v for k, v in expected.cost.items() if v})
