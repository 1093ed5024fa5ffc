"""Team references (``(location << 32) | k``) resolved by the kernel against the obvious lookups."""

from __future__ import annotations

import numpy as np

from analyzer.replay.kernels.teamref import team_numbers


def _reference(ref, start, dense_of_row):
    return [-1 if r < 0 else int(dense_of_row[start[r >> 32] + (r & 0xFFFFFFFF)]) for r in ref.tolist()]


def test_every_reference_resolves_as_the_lookups_do():
    rng = np.random.default_rng(7)
    forks = [3, 0, 5, 2]  # fork rows per location, the rows of the locations one after the other
    start = np.concatenate([[0], np.cumsum(forks)[:-1]]).astype(np.int64)
    dense_of_row = rng.permutation(sum(forks)).astype(np.int64)
    loc = rng.choice([0, 2, 3], 200)
    k = np.array([rng.integers(0, forks[l]) for l in loc])
    ref = (loc.astype(np.int64) << 32) | k
    ref[rng.random(200) < 0.2] = -1  # no team
    out = np.full(len(ref), -7, np.int64)
    assert team_numbers(ref, start, dense_of_row, out)
    assert out.tolist() == _reference(ref, start, dense_of_row)
    assert (out == -1).sum() == (ref < 0).sum() > 0


def test_a_reference_out_of_range_is_refused():
    start = np.array([0, 2], np.int64)
    dense_of_row = np.arange(3, dtype=np.int64)
    out = np.empty(1, np.int64)
    assert not team_numbers(np.array([5 << 32], np.int64), start, dense_of_row, out)  # no such location
    assert not team_numbers(np.array([(1 << 32) | 1], np.int64), start, dense_of_row, out)  # no such fork row
    assert team_numbers(np.array([(1 << 32) | 0], np.int64), start, dense_of_row, out) and out[0] == 2
