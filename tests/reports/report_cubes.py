"""Small hand-built cubes whose every value is written out below, so the
expected numbers in the tests can be checked by hand."""

from __future__ import annotations

import numpy as np

from analyzer.cube import Cube, LocationInfo, MetricInfo, RegionInfo

# call tree: 0 main, 1 main/foo, 2 main/foo/MPI_Recv, 3 main/MPI_Send
PARENT = [-1, 0, 1, 0]
REGION = [0, 1, 2, 3]
# locations: rank 0 thread 0, rank 0 thread 1 (node n0), rank 1 thread 0 (node n1)
LOCS = [("n0", 0, 0), ("n0", 0, 1), ("n1", 1, 0)]


def metrics():
    return [
        MetricInfo("time", "Time", None, "sec", "Total time spent in the program"),
        MetricInfo("mpi", "MPI", "time", "sec", "Time spent in MPI calls"),
        MetricInfo("mpi_latesender", "Late Sender", "mpi", "sec",
                   "Time a receive waited for a message not yet sent", "Post the send earlier"),
        MetricInfo("visits", "Visits", None, "occ", "Number of visits", dtype="INTEGER"),
    ]


def values(late_sender: float = 2.0, extra_time: float = 0.0) -> dict:
    """Exclusive along the call tree, inclusive along the metric tree.

    With the defaults: time total 11, mpi 3.5, mpi_latesender 2 (all on main/foo/MPI_Recv, rank 1).
    ``late_sender`` changes the Late Sender on rank 1's MPI_Recv, and with it mpi and time.
    """
    ls = late_sender
    recv = 1.0 + ls  # the receive: 1 s transfer + the wait
    time = np.array([
        [1.0, 0.5, 1.0 + extra_time],  # main
        [2.0, 2.0, 1.0],  # main/foo
        [0.0, 0.0, recv],  # main/foo/MPI_Recv
        [0.5, 0.0, 0.0],  # main/MPI_Send
    ])
    mpi = np.zeros((4, 3))
    mpi[2, 2] = recv
    mpi[3, 0] = 0.5
    lsv = np.zeros((4, 3))
    lsv[2, 2] = ls
    visits = np.array([[1, 1, 1], [1, 1, 1], [0, 0, 4], [4, 0, 0]], dtype=float)
    return {"time": time, "mpi": mpi, "mpi_latesender": lsv, "visits": visits}


def small_cube(late_sender: float = 2.0, extra_time: float = 0.0, region_names=None, machine="cluster") -> Cube:
    names = region_names or ["main", "foo", "MPI_Recv", "MPI_Send"]
    regions = [RegionInfo(names[0], "app.c", 10, 40, "user", "function"),
               RegionInfo(names[1], "app.c", 50, 60, "user", "function"),
               RegionInfo(names[2], "", -1, -1, "mpi", "point2point"),
               RegionInfo(names[3], "", -1, -1, "mpi", "point2point")]
    locs = [LocationInfo(machine, node, rank, thread) for node, rank, thread in LOCS]
    return Cube(metrics(), regions, np.array(PARENT), np.array(REGION), locs,
                values(late_sender, extra_time), strict=False)
