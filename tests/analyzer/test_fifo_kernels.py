"""kernels.fifo (channel numbering, FIFO pairing) against the slow references, and by hand."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.replay.kernels.fifo import channel_ids, fifo_pairs
from kernel_references import channel_ids_reference, fifo_pairs_reference


def test_channels_and_pairs_by_hand():
    # channel A = (0, 1, 0, 5), channel B = (0, 1, 0, 6); sends A, B, A; receives B, A, A, A
    src = np.array([0, 0, 0, 0, 0, 0, 0], np.int64)
    dst = np.ones(7, np.int64)
    comm = np.zeros(7, np.int64)
    tag = np.array([5, 6, 5, 6, 5, 5, 5], np.int64)
    chan, n = channel_ids(src, dst, comm, tag)
    assert chan.tolist() == [0, 1, 0, 1, 0, 0, 0] and n == 2
    # sends are rows 0..2, receives rows 3..6 (own numbering in each list)
    partner = fifo_pairs(chan[:3], np.arange(3), chan[3:], np.arange(4), n)
    # B-receive gets the B-send (1); the first two A-receives get sends 0 and 2; the last has none
    assert partner.tolist() == [1, 0, 2, -1]
    # matching order, not row order, decides: receives posted in reverse order
    partner = fifo_pairs(chan[:3], np.arange(3), chan[3:], np.array([3, 2, 1, 0]), n)
    assert partner.tolist() == [1, -1, 2, 0]


@pytest.mark.parametrize("seed", range(6))
def test_match_the_references(seed):
    rng = np.random.default_rng(seed)
    n = 400
    keys = [rng.integers(0, k, n).astype(np.int64) for k in (3, 3, 2, 2)]
    keys[3][::7] = 2**40 + 1  # large tags hash like small ones
    chan, n_chan = channel_ids(*keys)
    want, want_n = channel_ids_reference(*keys)
    assert chan.tolist() == want and n_chan == want_n
    ns = 180
    so, ro = rng.permutation(ns), rng.permutation(n - ns)
    got = fifo_pairs(chan[:ns], so, chan[ns:], ro, n_chan)
    assert got.tolist() == fifo_pairs_reference(chan[:ns], so, chan[ns:], ro)


def test_empty():
    z = np.zeros(0, np.int64)
    chan, n = channel_ids(z, z, z, z)
    assert len(chan) == 0 and n == 0
    assert len(fifo_pairs(z, z, z, z, 0)) == 0
