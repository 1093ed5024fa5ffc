"""MPI file I/O (patterns/mpi_io.py) on hand-built traces; every expected value is worked out in the comments."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer import analyze
from patterns.mpi_io import is_collective_file_call
from tracefmt.layout import FileIoFlag as F

R, W, C, NB = F.READ, F.WRITE, F.COLLECTIVE, F.NONBLOCKING


def io_call(b, loc, region, t0, t1, nbytes=None, flags=0):
    b.enter(loc, t0, region)
    if nbytes is not None:
        b.file_io(loc, t1, nbytes, flags)
    b.exit(loc, t1, region)


def io_trace():
    """Two ranks, each: open (1 s, collective), write_at 100 B (2 s, individual), write_at_all 300 B
    (3 s), read_at_all 50 B (4 s), iread 7 B (0.5 s, individual, non-blocking), seek (0.25 s,
    individual, no transfer), close (1 s, collective); rank 1 writes twice as much everywhere."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(2)]
    for r, loc in enumerate(locs):
        k = r + 1
        b.enter(loc, 0.0, "main")
        io_call(b, loc, "MPI_File_open", 1.0, 2.0)
        io_call(b, loc, "MPI_File_write_at", 2.0, 4.0, 100 * k, W)
        io_call(b, loc, "MPI_File_write_at_all", 4.0, 7.0, 300 * k, W | C)
        io_call(b, loc, "MPI_File_read_at_all", 7.0, 11.0, 50 * k, R | C)
        io_call(b, loc, "MPI_File_iread", 11.0, 11.5, 7 * k, R | NB)
        io_call(b, loc, "MPI_File_seek", 11.5, 11.75)
        io_call(b, loc, "MPI_File_close", 12.0, 13.0)
        b.exit(loc, 20.0, "main")
    return b.build()


@pytest.fixture(scope="module")
def cube():
    return analyze(io_trace(), plugins=False)


def total(cube, metric, path=None):
    v = np.asarray(cube.values[metric])
    if path is not None:
        v = v[cube.find_cnodes(path)]
    return float(v.sum())


def test_time_split_into_individual_and_collective(cube):
    # per rank: collective open 1 + write_at_all 3 + read_at_all 4 + close 1 = 9 s; individual 2 + 0.5 + 0.25
    assert total(cube, "mpi_io_collective") == pytest.approx(2 * 9.0)
    assert total(cube, "mpi_io_individual") == pytest.approx(2 * 2.75)
    assert total(cube, "mpi_io") == pytest.approx(2 * 11.75)
    assert total(cube, "mpi_io_collective", "main/MPI_File_read_at_all") == pytest.approx(8.0)
    assert total(cube, "mpi_io_individual", "main/MPI_File_read_at_all") == 0.0


@pytest.mark.parametrize("metric,expected", [
    ("mpi_file_ops", 2 * 4), ("mpi_file_iops", 2 * 2), ("mpi_file_irops", 2), ("mpi_file_iwops", 2),
    ("mpi_file_cops", 2 * 2), ("mpi_file_crops", 2), ("mpi_file_cwops", 2),
    # bytes of rank 0 plus twice as many on rank 1
    ("mpi_file_bytes", 3 * 457), ("mpi_file_ibytes", 3 * 107), ("mpi_file_irbytes", 3 * 7),
    ("mpi_file_iwbytes", 3 * 100), ("mpi_file_cbytes", 3 * 350), ("mpi_file_crbytes", 3 * 50),
    ("mpi_file_cwbytes", 3 * 300),
])
def test_operations_and_bytes(cube, metric, expected):
    assert total(cube, metric) == expected


def test_counted_at_the_call_that_moved_them_and_on_its_location(cube):
    v = np.asarray(cube.values["mpi_file_cwbytes"])[cube.find_cnodes("main/MPI_File_write_at_all")].sum(axis=0)
    assert sorted(v.tolist()) == [300.0, 600.0]
    assert total(cube, "mpi_file_ops", "main/MPI_File_seek") == 0.0


def test_bytes_not_recorded_are_not_measured():
    # MPI_File_write without its MPI_FILE_IO record (an older format or a foreign trace): n/a, not 0
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    b.enter(loc, 0.0, "main")
    io_call(b, loc, "MPI_File_write", 1.0, 2.0)
    b.exit(loc, 3.0, "main")
    cube = analyze(b.build(), plugins=False)
    assert "mpi_file_bytes" not in cube.values and "mpi_file_ops" not in cube.values
    assert total(cube, "mpi_io_individual") == pytest.approx(1.0)


def test_no_file_io_is_measured_zero():
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    b.enter(loc, 0.0, "main")
    io_call(b, loc, "MPI_File_open", 1.0, 2.0)
    b.exit(loc, 3.0, "main")
    cube = analyze(b.build(), plugins=False)
    assert total(cube, "mpi_file_ops") == 0.0 and total(cube, "mpi_io_collective") == pytest.approx(1.0)


@pytest.mark.parametrize("name,collective", [
    ("MPI_File_read_all", True), ("MPI_File_write_at_all_begin", True), ("MPI_File_iread_at_all", True),
    ("MPI_File_read_ordered", True), ("MPI_File_set_view", True), ("MPI_File_open", True),
    ("MPI_File_read", False), ("MPI_File_iwrite_at", False), ("MPI_File_seek_shared", False),
    ("MPI_File_get_size", False), ("MPI_Allreduce", False),
])
def test_collective_file_calls(name, collective):
    assert is_collective_file_call(name) is collective

