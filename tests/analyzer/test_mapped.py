"""analyzer/distributed/mapped.py: large arrays moved to files and mapped back, values and writes kept."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from analyzer.distributed.mapped import MappedStore


class _Pair(NamedTuple):
    a: np.ndarray
    b: int


class _Holder:
    def __init__(self):
        self.big = np.arange(100_000, dtype=np.float64)
        self.small = np.arange(3)
        self.pair = _Pair(np.ones(50_000, np.int32), 7)
        self.tables = {"t": {"col": np.arange(40_000, dtype=np.int64)}}
        self.trace = np.arange(100_000)  # left alone: named in skip


@numba.njit
def _bump(x):
    for i in range(x.shape[0]):
        x[i] += 1.0


def test_large_arrays_are_mapped_with_their_values_and_writes_survive_a_release(tmp_path):
    store = MappedStore(str(tmp_path), min_bytes=1 << 16)
    h = store.map(_Holder())
    assert isinstance(h.big, np.memmap) and isinstance(h.pair.a, np.memmap) and h.pair.b == 7
    assert isinstance(h.tables["t"]["col"], np.memmap)
    assert not isinstance(h.small, np.memmap) and not isinstance(h.trace, np.memmap)
    np.testing.assert_array_equal(h.big, np.arange(100_000))
    _bump(h.big)  # numba writes through the mapping
    assert store.release_all() == 3
    np.testing.assert_array_equal(h.big, np.arange(100_000) + 1.0)  # read back from the page cache or the file
    assert store.map(h) is h and store.mapped_bytes == 800_000 + 200_000 + 320_000  # mapped once


def test_a_new_mapped_array(tmp_path):
    store = MappedStore(str(tmp_path), min_bytes=16)
    a = store.empty((1000, 8), fill=-1.0)
    assert isinstance(a, np.memmap) and a.shape == (1000, 8) and (a == -1.0).all()


def test_views_stay_views_of_the_mapped_copy(tmp_path):
    """Columns of a packed array, mapped, are columns of its one mapped copy: a write through the packed array
    is seen through the column, and nothing is copied twice."""
    store = MappedStore(str(tmp_path), min_bytes=1 << 10)
    packed = np.zeros((10_000, 4))
    obj = {"col": packed[:, 2], "packed": packed, "tail": packed[5000:]}
    obj = store.map(obj)
    assert store.mapped_bytes == packed.nbytes
    obj["packed"][7, 2] = 3.5
    assert obj["col"][7] == 3.5 and obj["tail"][0, 0] == 0.0
    obj["tail"][0, 1] = 1.25
    assert obj["packed"][5000, 1] == 1.25
    assert store.release_all() == 1
    assert obj["col"][7] == 3.5


def test_the_original_goes_once_mapped(tmp_path):
    import weakref

    store = MappedStore(str(tmp_path), min_bytes=16)
    obj = {"a": np.arange(1000.0)}
    gone = weakref.ref(obj["a"])
    store.map(obj)
    assert gone() is None


def test_trim_releases_the_share_just_stepped_first_and_keeps_room_for_the_next_step(tmp_path):
    """Two shares' 32 MiB each, stepped in turn: trim() keeps both while the next step's expected growth (the
    32 MiB a step faulted in) fits the budget, then releases the share just stepped (needed last in the turn),
    and everything only when that is not enough."""
    from analyzer.distributed.mapped import resident_bytes

    mib = 1 << 20
    store = MappedStore(str(tmp_path), min_bytes=16)
    data = {s: store.map({"a": np.full(4 * mib, float(s + 1))}, key=s) for s in (0, 1)}
    store.new_stage()
    r0 = resident_bytes()
    store.budget = r0 + 80 * mib
    assert data[0]["a"].sum() == 4 * mib and store.trim(0) == 0  # 32 + 32 expected: fits
    assert store.growth >= 30 * mib
    assert data[1]["a"].sum() == 8 * mib and store.trim(1) == 1  # 64 + 32 would not: share 1 released
    assert resident_bytes() - r0 < 48 * mib  # share 0's pages stayed
    store.budget = r0 + 40 * mib
    assert data[0]["a"].sum() == 4 * mib and store.trim(0) == 1  # 32 + 32 > 40: share 0 released, then fits
    store.budget = r0 - 16 * mib
    assert store.trim(0) == 2  # not even the bare process fits: every mapping released
    np.testing.assert_array_equal(data[1]["a"][:3], 2.0)  # the values come back from the files


def test_a_share_not_yet_stepped_in_the_stage_is_expected_to_fault_in_all_it_has_mapped(tmp_path):
    """A stage's first round: a share that waits early touches little, one after it may touch all its data, so
    until a share has stepped, trim() keeps room for all it has mapped, not for the steps seen so far."""
    from analyzer.distributed.mapped import resident_bytes

    mib = 1 << 20
    store = MappedStore(str(tmp_path), min_bytes=16)
    small = store.map({"a": np.ones(mib)}, key=0)  # 8 MiB
    store.map({"a": np.ones(8 * mib)}, key=1)  # 64 MiB
    store.new_stage()
    r0 = resident_bytes()
    store.budget = r0 + 48 * mib
    assert small["a"].sum() == mib
    assert store.growth >= 64 * mib  # share 1 has not stepped: all of its 64 MiB
    assert store.trim(0) >= 1  # 8 + 64 > 48: released, though the step seen added 8
    assert resident_bytes() - r0 < 4 * mib
