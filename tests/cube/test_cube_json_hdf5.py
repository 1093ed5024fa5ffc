"""JSON summary and HDF5 output; numbers computed by hand from cube_helpers.small_cube."""

import json

import h5py
import numpy as np
import pytest
from cube_helpers import small_cube

from analyzer.cube import (
    CubeFormatError,
    LocationInfo,
    MetricInfo,
    compare_json,
    diff_cubes,
    read_hdf5,
    read_json,
    write_hdf5,
    write_json,
)
from analyzer.cube.json_summary import to_json_dict


# ---------------------------------------------------------------- JSON
def test_json_schema_and_values():
    d = to_json_dict(small_cube())
    assert d["format"] == "expert-analyze-summary" and d["version"] == 1
    assert list(d["metrics"]) == ["time", "mpi", "late_sender", "visits"]
    t = d["metrics"]["time"]
    assert t["unit"] == "sec" and t["parent"] is None and t["total"] == 14.0
    assert t["per_location"] == {"rank 0 thread 0": 4.25, "rank 0 thread 1": 2.5, "rank 1 thread 0": 7.25}
    assert t["per_callpath"] == {"main": 3.5, "main/foo/MPI_Recv": 7.0, "main/foo": 1.5, "main/MPI_Recv": 2.0}
    ls = d["metrics"]["late_sender"]
    assert ls["parent"] == "mpi"
    # zero entries are left out; the metric total is inclusive along the metric tree
    assert ls["per_location"] == {"rank 0 thread 0": 2.5, "rank 1 thread 0": 1.5}
    assert ls["per_callpath"] == {"main/foo/MPI_Recv": 2.5, "main/MPI_Recv": 1.5}
    assert d["metrics"]["mpi"]["total"] == 9.0
    v = d["metrics"]["visits"]
    assert v["total"] == 16 and isinstance(v["total"], int)
    assert v["per_location"]["rank 0 thread 1"] == 2 and isinstance(v["per_location"]["rank 0 thread 1"], int)


def test_json_same_path_from_two_call_sites_is_combined():
    c = small_cube(cnode_region=[0, 2, 1, 1])  # cnode 3 is now a second main/foo
    assert to_json_dict(c)["metrics"]["time"]["per_callpath"]["main/foo"] == 1.5 + 2.0


def test_json_bytes_are_reproducible(tmp_path):
    write_json(small_cube(), tmp_path / "a.json")
    write_json(small_cube(), tmp_path / "b.json")
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes()
    assert a.endswith(b"\n") and b"-0.0" not in a
    # floats are written with repr: 0.1 + 0.2 keeps all its digits
    c = small_cube(values={"time": np.full((4, 3), 0.0)})
    v = np.array(c.values["time"])
    v[0, 0] = 0.1 + 0.2
    txt = to_json_dict(small_cube(values={"time": v}))
    assert json.loads(json.dumps(txt))["metrics"]["time"]["total"] == 0.30000000000000004


def test_read_json_and_compare(tmp_path):
    p = tmp_path / "s.json"
    write_json(small_cube(), p)
    a = read_json(p)
    assert compare_json(a, a) == []
    v = {n: np.array(small_cube().values[n]) for n in small_cube().metric_names}
    v["late_sender"][3, 2] = 1.6
    b = to_json_dict(small_cube(values=v))
    diffs = compare_json(a, b)
    assert diffs == [
        "late_sender: total 4.0 vs 4.1",
        "late_sender per_location['rank 1 thread 0']: 1.5 vs 1.6",
        "late_sender per_callpath['main/MPI_Recv']: 1.5 vs 1.6",
    ]
    assert compare_json(a, b, rtol=0.1) == []
    assert compare_json(a, b, metrics=["time"]) == []
    del b["metrics"]["visits"]
    assert "visits: only in the first summary" in compare_json(a, b)


def test_read_json_errors(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"metrics": {"time": {"unit": "sec"')
    with pytest.raises(CubeFormatError, match="x.json: not JSON: .* at line 1, column"):
        read_json(p)
    p.write_text('{"metric": {}}')
    with pytest.raises(CubeFormatError, match="no 'metrics' object"):
        read_json(p)
    p.write_text('{"metrics": {"time": {"unit": "sec", "total": 1, "per_location": {}}}}')
    with pytest.raises(CubeFormatError, match="metrics\\['time'\\] lacks 'per_callpath'"):
        read_json(p)


# ---------------------------------------------------------------- HDF5
def test_hdf5_round_trip(tmp_path):
    p = tmp_path / "c.h5"
    c = small_cube()
    write_hdf5(c, p)
    back = read_hdf5(p)
    assert diff_cubes(c, back) == []
    assert back.metrics == c.metrics and back.regions == c.regions and back.locations == c.locations
    np.testing.assert_array_equal(back.cnode_parent, c.cnode_parent)  # ids are kept, not renumbered
    assert back.attrs == {"Run": "small"}


def test_hdf5_layout_is_chunked_and_compressed(tmp_path):
    p = tmp_path / "c.h5"
    write_hdf5(small_cube(values={"time": np.ones((4, 3))}), p)
    with h5py.File(p) as f:
        assert f.attrs["format"] == "expert-analyze-cube"
        ds = f["values/time/data"]
        assert ds.shape == (4, 3) and ds.chunks is not None and ds.compression == "gzip"
        assert list(f["values/time/rows"][()]) == [0, 1, 2, 3]
        assert "mpi" not in f["values"]  # metrics without stored values are left out
        assert [x.decode() for x in f["metrics/name"][()]] == ["time", "mpi", "late_sender", "visits"]
        assert list(f["locations/rank"][()]) == [0, 0, 1]
    assert read_hdf5(p).total("mpi") == 0.0
    write_hdf5(small_cube(), p)
    with h5py.File(p) as f:  # late_sender is non-zero at cnodes 1 and 3 only: only those rows are stored
        assert list(f["values/late_sender/rows"][()]) == [1, 3]
        np.testing.assert_array_equal(f["values/late_sender/data"][()], [[2.5, 0, 0], [0, 0, 1.5]])


def test_hdf5_odd_metric_names(tmp_path):
    metrics = [MetricInfo("a/b", unit="#"), MetricInfo("100%", parent="a/b")]
    c = small_cube(metrics=metrics, values={"a/b": np.ones((4, 3)), "100%": np.full((4, 3), 0.5)}, strict=False,
                   locations=[LocationInfo(rank=0), LocationInfo(rank=1), LocationInfo(rank=2)])
    p = tmp_path / "o.h5"
    write_hdf5(c, p)
    assert diff_cubes(c, read_hdf5(p)) == []


def test_hdf5_errors(tmp_path):
    p = tmp_path / "n.h5"
    p.write_bytes(b"not hdf5")
    with pytest.raises(CubeFormatError, match="n.h5: not an HDF5 file"):
        read_hdf5(p)
    with h5py.File(p, "w") as f:
        f.attrs["format"] = "something else"
    with pytest.raises(CubeFormatError, match="not a cube written by us"):
        read_hdf5(p)
    write_hdf5(small_cube(), p)
    with h5py.File(p, "a") as f:
        del f["calltree/region"]
    with pytest.raises(CubeFormatError, match="missing dataset or group"):
        read_hdf5(p)
