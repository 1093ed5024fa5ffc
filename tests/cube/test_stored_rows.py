"""The CUBE readers hold each metric as its nonzero rows (issue 18, item 3): a small file declaring many call
paths, locations and metrics costs what it stores, and every value reads as before."""

import pickle
import tracemalloc

import numpy as np
import pytest

from analyzer.cube import CubeFormatError, read_cubex, write_cubex
from analyzer.cube.stored_rows import RowValues, StoredRows
from cube_helpers import small_cube
from hostile_cubes import hostile_cubex


def test_a_file_of_many_sparse_metrics_holds_its_rows_not_dense_arrays(tmp_path):
    path = tmp_path / "h.cubex"
    size = hostile_cubex(path, "many_sparse", target_bytes=256 << 10, metric_bytes=4 << 20)
    tracemalloc.start()
    cube = read_cubex(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_dense = 8 * cube.n_cnodes * cube.n_locations * len(cube.metrics)
    assert n_dense > 40 * size  # what a reader holding every metric dense would take
    assert peak < 16 * size < n_dense / 2  # the anchor (XML) and the rows
    last = cube.values[cube.metrics[-1].name]
    assert last.shape == (cube.n_cnodes, cube.n_locations) and last.sum() == cube.n_locations
    assert np.all(last[-1] == 1.0) and not last.flags.writeable


@pytest.mark.parametrize("kind", ["zeros", "compressed"])
def test_compressed_rows_are_read_within_their_budget(tmp_path, kind):
    path = tmp_path / "h.cubex"
    hostile_cubex(path, kind, target_bytes=256 << 10, metric_bytes=4 << 20)
    if kind == "zeros":  # zero rows are not held: every metric reads as zeros
        cube = read_cubex(path)
        assert all(not np.any(cube.values[m.name]) for m in cube.metrics)
    else:  # 4 MiB of ones per metric from about 4 kB each: refused once they pass 16 MiB
        with pytest.raises(CubeFormatError, match="more than a file of .* bytes can hold"):
            read_cubex(path)


def test_values_read_back_as_written_and_behave_as_a_mapping(tmp_path):
    c = small_cube()
    write_cubex(c, tmp_path / "a.cubex")
    r = read_cubex(tmp_path / "a.cubex")
    assert isinstance(r.values, RowValues)
    order = [c.callpaths.index(p) for p in r.callpaths]  # the writer numbers call paths depth first
    for m in c.metrics:
        assert np.array_equal(r.values[m.name], c.values[m.name][order])
    stored = sorted(r.values)
    assert stored == sorted(n for n in r.values.keys()) and len(r.values) == len(stored)
    assert all(n in r.values for n in stored) and "nonexistent" not in r.values
    r.values["time"] = np.ones((r.n_cnodes, r.n_locations))  # an assigned array is kept
    assert r.values["time"].sum() == r.n_cnodes * r.n_locations
    back = pickle.loads(pickle.dumps(r.values))
    assert np.array_equal(back["time"], r.values["time"]) and np.array_equal(back["mpi"], r.values["mpi"])
    with pytest.raises(KeyError):
        r.values["nonexistent"]


def test_inclusive_rows_to_exclusive_match_the_dense_subtraction():
    rng = np.random.default_rng(3)
    parent = np.array([-1, 0, 0, 1, 1, 2, 5, -1, 7])
    rows = np.array([0, 1, 3, 5, 6, 8])
    data = rng.random((rows.size, 3))
    dense = np.zeros((parent.size, 3))
    dense[rows] = data
    expected = dense.copy()
    kids = np.flatnonzero(parent >= 0)
    np.subtract.at(expected, parent[kids], dense[kids])
    got = StoredRows(rows, data).minus_children(parent).dense(dense.shape)
    assert np.allclose(got, expected)


def test_compressed_members_together_inflate_within_the_files_budget(tmp_path, monkeypatch):
    import analyzer.cube.stored_rows as sr

    path = tmp_path / "z.cubex"
    hostile_cubex(path, "zeros", target_bytes=256 << 10, metric_bytes=4 << 20)  # 6 metrics of 4 MiB of zeros
    monkeypatch.setattr(sr, "INFLATE_FLOOR", 10 << 20)
    with pytest.raises(CubeFormatError, match="decompression bomb"):
        read_cubex(path)


def test_all_metrics_with_data_are_bounded_as_dense_work(tmp_path, monkeypatch):
    """Each caller's pass over the metrics builds every one dense: metrics x cnodes x locations is bounded."""
    import analyzer.cube.stored_rows as sr

    path = tmp_path / "h.cubex"
    hostile_cubex(path, "many_sparse", target_bytes=256 << 10, metric_bytes=4 << 20)
    monkeypatch.setattr(sr, "DENSE_BYTES_FLOOR", 16 << 20)  # 6 metrics x 4 MiB pass it
    with pytest.raises(CubeFormatError, match=r"x \d+ metrics need .* GiB as dense values"):
        read_cubex(path)


def test_a_compressed_cube_costs_its_size_not_its_inflated_values(tmp_path):
    """A legitimate compressed cube (as Scalasca's writer stores data) whose values deflate many times: a wait
    state on one location in 256.  Its metrics are held as their members and decoded when asked for; every
    value reads as the same cube's uncompressed file gives it."""
    from hostile_cubes import _cube, compressed_cubex

    n_c, n_l = 512, 256
    rng = np.random.default_rng(5)

    def rows_of(i):
        data = np.zeros((n_c, n_l))
        data[:, i % n_l] = rng.random(n_c) + 1.0
        return StoredRows(np.arange(n_c), data)

    cube = _cube(n_c, n_l, 8, rows_of)
    size = compressed_cubex(cube, tmp_path / "z.cubex")
    write_cubex(cube, tmp_path / "plain.cubex")
    tracemalloc.start()
    got = read_cubex(tmp_path / "z.cubex")
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert 8 * n_c * n_l * len(cube.metrics) > 10 * size  # the values inflated: 8 MiB from 300 kB
    assert held < 2 * size
    plain = read_cubex(tmp_path / "plain.cubex")
    for m in cube.metrics:
        assert np.array_equal(got.values[m.name], plain.values[m.name])
        assert got.values[m.name].sum() > 0
    back = pickle.loads(pickle.dumps(got.values))
    assert np.array_equal(back["m3"], plain.values["m3"])
