"""The in-memory cube: validation, queries and the networkx/pandas views.

Expected numbers are computed by hand from the values in ``cube_helpers.small_cube``.
"""

import sys

import numpy as np
import pytest
from cube_helpers import small_cube

from analyzer.cube import Cube, CubeError, LocationInfo, MetricInfo, RegionInfo, diff_cubes, region_strings
from tracefmt.layout import Paradigm, Role


# ---------------------------------------------------------------- queries
def test_callpaths_and_dfs_order():
    c = small_cube()
    assert c.callpaths == ["main", "main/foo/MPI_Recv", "main/foo", "main/MPI_Recv"]
    assert c.callpath(2) == "main/foo"
    assert c.dfs_order() == [0, 2, 1, 3]
    assert c.roots() == [0]
    assert c.children(0) == [2, 3]
    assert c.find_cnodes("main/MPI_Recv") == [3]
    with pytest.raises(IndexError):
        c.callpath(4)


def test_totals_per_location_per_callpath():
    c = small_cube()
    assert c.total("time") == 14.0
    np.testing.assert_array_equal(c.per_location("time"), [4.25, 2.5, 7.25])
    assert c.per_callpath("time") == {"main": 3.5, "main/foo/MPI_Recv": 7.0, "main/foo": 1.5, "main/MPI_Recv": 2.0}
    assert c.total("late_sender") == 4.0
    assert c.total("visits") == 16.0


def test_inclusive_along_call_tree():
    c = small_cube()
    incl = c.inclusive("time")
    np.testing.assert_allclose(incl[2], [3.25, 0.5, 4.75])  # foo + its MPI_Recv
    np.testing.assert_allclose(incl[0], [4.25, 2.5, 7.25])  # everything
    np.testing.assert_allclose(incl[1], c.values["time"][1])  # a leaf
    # the stored values are untouched
    assert c.values["time"][0, 0] == 1.0


def test_metric_tree_queries():
    c = small_cube()
    assert c.metric_names == ["time", "mpi", "late_sender", "visits"]
    assert c.metric_children("time") == ["mpi"]
    assert c.metric_children("late_sender") == []
    assert c.metric_roots() == ["time", "visits"]
    own = c.exclusive_in_metric("mpi")
    np.testing.assert_allclose(own, [[0, 0, 0], [0.5, 0, 4.0], [0, 0, 0], [0, 0, 0.5]])
    assert c.metric("mpi").diagnosis == "Reduce MPI time."
    with pytest.raises(KeyError, match="no metric 'nope'.*time"):
        c.metric("nope")


def test_missing_metric_values_read_as_zeros_without_memory():
    c = small_cube(values={"time": np.ones((4, 3))})
    z = c.values["visits"]
    assert z.shape == (4, 3) and not z.any()
    assert z.strides == (0, 0)  # a broadcast view, not an allocation
    assert c.total("mpi") == 0.0
    with pytest.raises(KeyError):
        c.values["nope"]


def test_from_arrays_dense_block():
    base = small_cube()
    block = np.stack([base.values[n] for n in base.metric_names])
    c = Cube.from_arrays(base.metrics, base.regions, base.cnode_parent, base.cnode_region, base.locations, block)
    assert diff_cubes(base, c) == []
    with pytest.raises(CubeError, match="expected \\(4, n_cnodes, n_locations\\)"):
        Cube.from_arrays(base.metrics, base.regions, base.cnode_parent, base.cnode_region, base.locations, block[:2])


# ---------------------------------------------------------------- validation
def _bad(match, **kw):
    with pytest.raises(CubeError, match=match):
        small_cube(**kw)


def test_rejects_several_roots_with_advice():
    _bad("2 root cnodes.*synthetic root", cnode_parent=[-1, 2, 0, -1])


def test_rejects_cycles_and_bad_ids():
    _bad("cycle", cnode_parent=[-1, 2, 1, 0])
    _bad("cnode 1: parent 7", cnode_parent=[-1, 7, 0, 0])
    _bad("cnode 2: parent 2", cnode_parent=[-1, 2, 2, 0])
    _bad("cnode 3: region 9", cnode_region=[0, 2, 1, 9])
    _bad("cnode_region has 3 entries", cnode_region=[0, 1, 2])
    _bad("call tree is empty", cnode_parent=[], cnode_region=[], values={})


def test_rejects_bad_value_shapes_and_values():
    _bad("'time': values have shape \\(3, 3\\), expected \\(4, 3\\)", values={"time": np.zeros((3, 3))})
    _bad("unknown metric 'bogus'", values={"bogus": np.zeros((4, 3))})
    v = np.zeros((4, 3))
    v[1, 2] = np.nan
    _bad("'time': value at cnode 1, location 2 is nan", values={"time": v})


def test_rejects_metric_tree_errors():
    m = small_cube().metrics
    _bad("parent 'mpi' comes after its child", metrics=[m[0], m[2], m[1], m[3]])
    _bad("parent 'nothing' does not exist", metrics=[m[0], MetricInfo("x", parent="nothing")])
    _bad("'time' is used twice", metrics=[m[0], m[0]])
    _bad("lower case", metrics=[MetricInfo("Time")], values={})
    _bad("unit 'seconds'", metrics=[MetricInfo("time", unit="seconds")], values={})
    _bad("dtype 'DOUBLE'", metrics=[MetricInfo("time", dtype="DOUBLE")], values={})


def test_rejects_location_clashes():
    _bad("locations 0 and 1 are both rank 0 thread 0", locations=[LocationInfo(rank=0), LocationInfo(rank=0),
                                                                     LocationInfo(rank=1)])
    _bad("rank 0 is on m/b", locations=[LocationInfo("m", "a", 0, 0), LocationInfo("m", "b", 0, 1),
                                         LocationInfo("m", "a", 1, 0)])
    _bad("at least one location", locations=[], values={})


def test_non_strict_allows_foreign_conventions():
    c = small_cube(
        metrics=[MetricInfo("PAPI_TOT_INS", unit="#")],
        values={},
        cnode_parent=[-1, 2, 0, -1],
        strict=False,
    )
    assert c.roots() == [0, 3]
    assert c.callpaths[3] == "MPI_Recv"


def test_region_strings_follow_cube_vocabulary():
    assert region_strings(Paradigm.MPI, Role.MPI_POINT2POINT) == ("mpi", "point2point")
    assert region_strings(Paradigm.MPI, Role.MPI_COLL_BARRIER) == ("mpi", "barrier")
    assert region_strings(Paradigm.MPI, Role.MPI_COLL_ONE2ALL) == ("mpi", "one2all")
    assert region_strings(Paradigm.MPI, Role.MPI_COLL_OTHER) == ("mpi", "other collective")
    assert region_strings(Paradigm.OPENMP, Role.OMP_IMPLICIT_BARRIER) == ("openmp", "implicit barrier")
    assert region_strings(Paradigm.OPENMP, Role.OMP_CRITICAL_BODY) == ("openmp", "critical sblock")
    assert region_strings(Paradigm.OPENMP, Role.OMP_PARALLEL) == ("openmp", "parallel")
    assert region_strings(Paradigm.USER, Role.FUNCTION) == ("user", "function")
    assert region_strings(Paradigm.COMPILER, Role.LOOP) == ("compiler", "loop")
    assert region_strings(Paradigm.MEASUREMENT, Role.MEASUREMENT_FLUSH) == ("measurement", "artificial")
    assert region_strings(99, 250) == ("unknown", "unknown")
    # every code the trace format defines has a CUBE string
    for p in Paradigm:
        for r in Role:
            assert "unknown" not in region_strings(p, r)[1]


def test_diff_cubes_reports_by_identity():
    a = small_cube()
    assert diff_cubes(a, small_cube()) == []
    v = {n: np.array(a.values[n]) for n in a.metric_names}
    v["late_sender"][3, 2] += 1e-3
    d = diff_cubes(a, small_cube(values=v))
    assert d == ["metric 'late_sender' at 'main/MPI_Recv', rank 1 thread 0: 1.5 vs 1.501"]
    assert diff_cubes(a, small_cube(values=v), atol=1e-2) == []


# ---------------------------------------------------------------- graphs and frames
def test_calltree_graph():
    g = small_cube().calltree_graph(["time", "late_sender"])
    assert sorted(g.edges) == [(0, 2), (0, 3), (2, 1)]
    n = g.nodes[2]
    assert (n["region"], n["path"], n["file"], n["line"]) == ("foo", "main/foo", "app.c", 100)
    assert n["time"] == 1.5 and n["time.incl"] == 8.5
    assert g.nodes[0]["late_sender.incl"] == 4.0
    assert "time" not in small_cube().calltree_graph().nodes[0]


def test_system_graph():
    g = small_cube().system_graph("time")
    assert g.nodes[("machine", "cluster")]["time"] == 14.0
    assert g.nodes[("node", "cluster", "n0")]["time"] == 6.75
    assert g.nodes[("process", 1)]["time"] == 7.25
    t = g.nodes[("thread", 0, 1)]
    assert (t["kind"], t["location"], t["time"]) == ("thread", 1, 2.5)
    assert set(g.successors(("process", 0))) == {("thread", 0, 0), ("thread", 0, 1)}


def test_to_dataframe_without_pandas_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes "import pandas" fail
    with pytest.raises(ImportError, match="pip install pandas"):
        small_cube().to_dataframe()


def test_to_dataframe_rows():
    import pandas  # noqa: F401  (optional for users, extra 'dataframe'; always in the test extra)

    df = small_cube().to_dataframe(["late_sender"])
    assert list(df.columns) == ["metric", "cnode", "callpath", "region", "location", "rank", "thread", "value"]
    rows = sorted(zip(df.callpath, df["rank"], df.thread, df.value))
    assert rows == [("main/MPI_Recv", 1, 0, 1.5), ("main/foo/MPI_Recv", 0, 0, 2.5)]


def test_region_info_defaults():
    r = RegionInfo("x")
    assert (r.file, r.begin_line, r.end_line, r.paradigm, r.role) == ("", -1, -1, "unknown", "unknown")
    assert MetricInfo("a", parent="").parent is None
    assert LocationInfo(rank=3, thread=2).key == "rank 3 thread 2"
