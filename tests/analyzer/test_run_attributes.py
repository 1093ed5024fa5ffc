"""What a trace says of its run (its attributes: command, clock, which OpenMP runtime ran) goes into the cube as
``trace::KEY`` (CUBE and HDF5 files), and the text report names the OpenMP runtime above the properties."""

from __future__ import annotations

import io

import tracefmt
from analyzer.analyze import TRACE_ATTR, analyze
from analyzer.cli.text_report import report
from analyzer.cube import read_cubex, read_hdf5, write_cubex, write_hdf5

RUNTIME = ("LLVM libomp (/usr/lib/llvm-14/lib/libomp.so.5, LLVM OMP version: 5.0.20140926, OpenMP API 201611), "
           "in place of the program's GCC libgomp; constructs recorded through OMPT")


def small_trace(**attributes):
    """one thread in main [0, 2] with a parallel region [0.5, 1.5] (a team of one)"""
    b = tracefmt.TraceBuilder()
    m = b.location(rank=0, thread=0)
    b.enter(m, 0.0, "main")
    b.fork(m, 0.5, 1, 1)
    b.enter(m, 0.5, "!$omp parallel @p.c:3", team=1)
    b.exit(m, 1.5, "!$omp parallel @p.c:3")
    b.join(m, 1.5, 1, 1)
    b.exit(m, 2.0, "main")
    for key, value in attributes.items():
        b.attribute(key, value)
    return b.build()


def test_trace_attributes_are_cube_attributes_in_every_file(tmp_path):
    cube = analyze(small_trace(command="./app 3 'x'", openmp_runtime=RUNTIME), patterns="time", plugins=False)
    assert cube.attrs[TRACE_ATTR + "command"] == "./app 3 'x'"
    assert cube.attrs[TRACE_ATTR + "openmp_runtime"] == RUNTIME
    write_cubex(cube, tmp_path / "c.cubex")
    write_hdf5(cube, tmp_path / "c.h5")
    for back in (read_cubex(tmp_path / "c.cubex"), read_hdf5(tmp_path / "c.h5")):
        assert back.attrs[TRACE_ATTR + "openmp_runtime"] == RUNTIME
        assert back.attrs[TRACE_ATTR + "command"] == "./app 3 'x'"


def test_report_names_the_openmp_runtime_first():
    out = io.StringIO()
    report(analyze(small_trace(openmp_runtime=RUNTIME), patterns="time", plugins=False), out=out)
    lines = out.getvalue().splitlines()
    assert lines[:3] == [f"OpenMP runtime: {RUNTIME}", "", "Performance properties (severity, % of total time)"]
    # a trace that does not say (older runtimes, other formats, no OpenMP) gets no such line
    out = io.StringIO()
    report(analyze(small_trace(), patterns="time", plugins=False), out=out)
    assert out.getvalue().startswith("Performance properties") and "OpenMP runtime" not in out.getvalue()
