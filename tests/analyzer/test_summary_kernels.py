"""kernels.summary against the slow reference in kernel_references, on random and hand-built inputs."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.replay.kernels.bundles import Calls
from analyzer.replay.kernels.summary import call_summary
from kernel_references import call_summary_reference


def _random_calls(rng, n_calls, n_nodes):
    """A random well-nested call sequence: each call's parent is an earlier still-open call."""
    node = rng.integers(1, n_nodes, n_calls).astype(np.int32)
    enter = np.sort(rng.random(n_calls))
    exit_ = enter + rng.random(n_calls) * 0.1
    parent = np.array([-1] + [int(rng.integers(-1, i)) for i in range(1, n_calls)], np.int32)
    return node, enter, exit_, parent


def test_call_summary_by_hand():
    # call 0: node 1 [0, 10]; call 1: node 2 [1, 4] child of 0; call 2: node 2 [5, 6] child of 0
    node = np.array([1, 2, 2], np.int32)
    enter = np.array([0.0, 1.0, 5.0])
    exit_ = np.array([10.0, 4.0, 6.0])
    parent = np.array([-1, 0, 0], np.int32)
    got = call_summary(Calls(node, enter, exit_, parent), 4)
    assert got.nodes.tolist() == [1, 2] and got.visits.tolist() == [1, 2]
    assert got.incl.tolist() == [10.0, 4.0] and got.excl.tolist() == [6.0, 4.0]


@pytest.mark.parametrize("seed", range(5))
def test_call_summary_matches_reference(seed):
    rng = np.random.default_rng(seed)
    node, enter, exit_, parent = _random_calls(rng, 300, 12)
    got = call_summary(Calls(node, enter, exit_, parent), 12)
    want = call_summary_reference(node, enter, exit_, parent)
    assert got[0].tolist() == want[0] and got[1].tolist() == want[1]
    assert got[2].tolist() == want[2] and got[3].tolist() == want[3]  # same summation order: exact


def test_call_summary_empty():
    z = np.zeros(0)
    nodes, v, inc, exc = call_summary(Calls(np.zeros(0, np.int32), z, z, np.zeros(0, np.int32)), 5)
    assert len(nodes) == len(v) == len(inc) == len(exc) == 0
