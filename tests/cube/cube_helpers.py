"""Shared helpers of the cube tests: fixture location, a hand-built cube, oracle readers."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from analyzer.cube import Cube, LocationInfo, MetricInfo, RegionInfo

REPO = Path(__file__).resolve().parents[2]
#: CUBE files written by cubelib/Score-P with cube_dump oracle CSVs (CI clones shared/ beside the repo)
FIXTURES = REPO.parent / "shared" / "fixtures" / "cube"


def fixture(name: str) -> Path:
    path = FIXTURES / name
    assert path.is_file(), f"fixture {path} is missing: the tests expect ../shared/fixtures beside the repository"
    return path


def small_cube(**kw) -> Cube:
    """A hand-built cube whose every derived number is easy to compute by hand.

    Call tree (ids as given, deliberately *not* depth-first):
        0 main
        +- 2 foo          (region 1)
        |  +- 1 MPI_Recv  (region 2)
        +- 3 MPI_Recv     (region 2, a second call path of the same region)
    Locations: 0 = rank 0 thread 0, 1 = rank 0 thread 1, 2 = rank 1 thread 0.
    Metrics: time > mpi > late_sender; visits (INTEGER).
    """
    metrics = [
        MetricInfo("time", "Time", None, "sec", "Wall-clock time"),
        MetricInfo("mpi", "MPI", "time", "sec", "Time in MPI", diagnosis="Reduce MPI time."),
        MetricInfo("late_sender", "Late Sender", "mpi", "sec", "Waiting for a sender", diagnosis="Send earlier."),
        MetricInfo("visits", "Visits", None, "occ", "Number of calls", dtype="INTEGER"),
    ]
    regions = [
        RegionInfo("main", "app.c", 10, 90, "user", "function"),
        RegionInfo("foo", "app.c", 100, 120, "user", "function"),
        RegionInfo("MPI_Recv", "", -1, -1, "mpi", "point2point"),
    ]
    parent = [-1, 2, 0, 0]
    region = [0, 2, 1, 2]
    locations = [
        LocationInfo("cluster", "n0", 0, 0),
        LocationInfo("cluster", "n0", 0, 1),
        LocationInfo("cluster", "n1", 1, 0),
    ]
    time = np.array(
        [
            [1.0, 2.0, 0.5],  # main
            [3.0, 0.0, 4.0],  # main/foo/MPI_Recv
            [0.25, 0.5, 0.75],  # main/foo
            [0.0, 0.0, 2.0],  # main/MPI_Recv
        ]
    )
    mpi = np.array([[0, 0, 0], [3.0, 0, 4.0], [0, 0, 0], [0, 0, 2.0]])
    late = np.array([[0, 0, 0], [2.5, 0, 0], [0, 0, 0], [0, 0, 1.5]])
    visits = np.array([[1, 1, 1], [3, 0, 5], [1, 1, 1], [0, 0, 2]], dtype=float)
    values = {"time": time, "mpi": mpi, "late_sender": late, "visits": visits}
    args = dict(metrics=metrics, regions=regions, cnode_parent=parent, cnode_region=region,
                locations=locations, values=values, attrs={"Run": "small"})
    args.update(kw)
    return Cube(**args)


def read_dump_csv(path: Path, encoding: str = "utf-8") -> tuple[list[str], dict[tuple[int, int], list[str]]]:
    """A ``cube_dump -s csv2`` file: (metric columns, {(cnode, thread): fields})."""
    with open(path, newline="", encoding=encoding) as f:
        rows = list(csv.reader(f))
    header = [h.strip() for h in rows[0]]
    assert header[:2] == ["Cnode ID", "Thread ID"], header
    return header[2:], {(int(r[0]), int(r[1])): r[2:] for r in rows[1:]}


def oracle_matrix(path: Path, metric: str, shape: tuple[int, int], encoding="utf-8") -> np.ndarray:
    names, rows = read_dump_csv(path, encoding)
    j = names.index(metric)
    out = np.full(shape, np.nan)
    for (c, t), fields in rows.items():
        out[c, t] = float(fields[j])
    assert not np.isnan(out).any(), f"{path.name}: {metric} does not cover every (cnode, thread)"
    return out


def pycubexr_values(path: Path) -> dict[str, np.ndarray]:
    """Every metric of a file as pycubexr reads it: name -> [cnode id, location Id] (stored semantics
    converted to exclusive along the call tree)."""
    from pycubexr import CubexParser

    out = {}
    with CubexParser(str(path)) as p:
        cnodes = sorted(p.all_cnodes(), key=lambda c: c.id)
        for m in p.all_metrics():
            mv = p.get_metric_values(m)
            excl = str(getattr(m.metric_type, "name", m.metric_type)).upper() == "INCLUSIVE"
            rows = [mv.cnode_values(c, convert_to_exclusive=excl) for c in cnodes]
            # MIN/MAX doubles come back wrapped in pycubexr value classes
            out[m.name] = np.array([np.asarray(getattr(r, "_values", r), dtype=np.float64) for r in rows])
    return out
