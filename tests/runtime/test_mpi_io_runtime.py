"""MPI file I/O traced by the runtime (format 2.2 MPI_FILE_IO), under Open MPI and MPICH.

samples/runtime/mpi_io.c makes the same calls on every rank; its comment gives the operations and bytes.
"""
from __future__ import annotations

import numpy as np
import pytest

import analyzer
import tracefmt
from runtime_harness import MPI_TOOLS, assert_valid, trace_mpi_sample
from tracefmt.layout import EventType, FileIoFlag

pytestmark = pytest.mark.runtime

R, W, C, NB = FileIoFlag.READ, FileIoFlag.WRITE, FileIoFlag.COLLECTIVE, FileIoFlag.NONBLOCKING


@pytest.fixture(scope="module", params=sorted(MPI_TOOLS))
def traced(request, runtime_built, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"mpi_io_{request.param}")
    path = trace_mpi_sample(d, request.param, "mpi_io.c", 2)
    trace = tracefmt.open(str(path))
    assert_valid(trace)
    return trace, analyzer.analyze(str(path))


def test_each_transfer_recorded_inside_its_call(traced):
    trace, _ = traced
    names = {rid: r.name for rid, r in trace.defs.regions.items()}
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        stack, seen = [], []
        for i in range(len(ev)):
            t = int(ev.type[i])
            if t == EventType.ENTER:
                stack.append(names[int(ev.a[i])])
            elif t == EventType.EXIT:
                stack.pop()
            elif t == EventType.MPI_FILE_IO:
                seen.append((stack[-1], int(ev.flags[i]), int(ev.d[i])))
        assert seen == [("MPI_File_write_at", W, 8000), ("MPI_File_write_at_all", W | C, 8000),
                        ("MPI_File_read_at_all", R | C, 4000), ("MPI_File_iread_at", R | NB, 400)]


@pytest.mark.parametrize("metric,per_rank", [
    ("mpi_file_iwops", 1), ("mpi_file_irops", 1), ("mpi_file_cwops", 1), ("mpi_file_crops", 1),
    ("mpi_file_iwbytes", 8000), ("mpi_file_irbytes", 400), ("mpi_file_cwbytes", 8000), ("mpi_file_crbytes", 4000),
])
def test_operations_and_bytes_per_rank(traced, metric, per_rank):
    _, cube = traced
    per_loc = np.asarray(cube.values[metric]).sum(axis=0)
    assert sorted(per_loc.tolist()) == [per_rank, per_rank]


def test_file_time_split(traced):
    _, cube = traced
    io = float(np.asarray(cube.values["mpi_io"]).sum())
    parts = sum(float(np.asarray(cube.values[m]).sum()) for m in ("mpi_io_individual", "mpi_io_collective"))
    assert io > 0 and parts == pytest.approx(io, rel=1e-12)
    coll = np.asarray(cube.values["mpi_io_collective"])[cube.find_cnodes(f"{cube.callpaths[0]}/MPI_File_open")]
    assert float(coll.sum()) > 0
