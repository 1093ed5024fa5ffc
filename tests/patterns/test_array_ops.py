"""patterns.array_ops against the obvious Python they replace."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from patterns.array_ops import by_keys, local_ranks, operation_in, pairs_in


def test_pairs_in_matches_a_set_of_tuples():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 300), rng.choice([0.0, -0.0, 0.5, 1.25, 3.0], 300)
    sa, sb = rng.integers(0, 4, 40), rng.choice([0.0, 0.5, 2.0, 3.0], 40)
    pairs = set(zip(sa.tolist(), sb.tolist()))
    expected = [(int(x), float(y)) in pairs for x, y in zip(a, b)]
    assert pairs_in(a, b, sa, sb).tolist() == expected
    assert pairs_in(a, b, sa[:0], sb[:0]).tolist() == [False] * len(a)


def test_local_ranks_is_the_position_in_the_communicator():
    comms = {0: SimpleNamespace(ranks=[3, 1, 2, 0]), 5: SimpleNamespace(ranks=[7, 2, 2]), 6: SimpleNamespace(ranks=[])}
    comm = np.array([0, 5, 0, 5, 9, 6, 5, 0])
    rank = np.array([0, 2, 3, 7, 4, 1, 8, 5])
    expected = [comms[c].ranks.index(r) if c in comms and r in comms[c].ranks else r
                for c, r in zip(comm.tolist(), rank.tolist())]
    assert local_ranks(comms, comm, rank).tolist() == expected == [3, 1, 0, 0, 4, 1, 8, 5]


def test_operation_in_reads_the_region_table():
    ops = ["", "send", "waitall", "recv"]
    regions = np.array([1, 2, 3, 0, -1, 7, 2])
    assert operation_in(ops, regions, ("send", "waitall")).tolist() == [True, True, False, False, False, False, True]


def test_by_keys_is_lexsort():
    rng = np.random.default_rng(5)
    a, b, c = rng.integers(0, 5, 500), rng.integers(0, 40, 500), rng.integers(0, 3, 500)
    assert by_keys(a, b, c).tolist() == np.lexsort((c, b, a)).tolist()
    huge = b.astype(np.int64) << 58  # too wide for one key: lexsort itself
    assert by_keys(a, huge, c).tolist() == np.lexsort((c, huge, a)).tolist()
