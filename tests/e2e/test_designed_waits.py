"""A real hybrid program with designed waits, traced by the C runtime and analyzed end to end.

samples/waits/hybrid_waits.c sleeps for its "work", so each designed wait is
known from its source; samples.demo.PROGRAM_DESIGNED says where each must
appear.  Each finding must land on the designed call path and location within
20 % of the designed value, and the .cubex must give pycubexr the same numbers.
"""
from __future__ import annotations

import numpy as np
import pycubexr
import pytest

import analyzer
from analyzer.cube import read_cubex, write_cubex
from samples.demo import PROGRAM_DESIGNED, matching_cnodes, toolchain_missing, trace_designed_program

pytestmark = pytest.mark.runtime

SCALE = 0.5  # halves every designed wait to keep the run short; still far above timer noise


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    why_not = toolchain_missing()
    if why_not:
        pytest.skip(f"cannot trace a real program: {why_not}")
    d = tmp_path_factory.mktemp("designed")
    trace = trace_designed_program(d, scale=SCALE)
    cube = analyzer.analyze(str(trace))
    out = d / "hybrid_waits.cubex"
    write_cubex(cube, str(out))
    return cube, out


def location_index(cube, rank, thread):
    return [i for i, loc in enumerate(cube.locations) if loc.rank == rank and (thread is None or loc.thread == thread)]


@pytest.mark.parametrize("prop,suffix,rank,thread,seconds", PROGRAM_DESIGNED)
def test_designed_wait_found_on_its_call_path_and_location(analyzed, prop, suffix, rank, thread, seconds):
    cube, _ = analyzed
    cnodes = matching_cnodes(cube, suffix)
    assert cnodes, f"no call path ends with {suffix!r}; have {cube.callpaths()}"
    values = np.asarray(cube.values[prop])
    found = float(values[np.ix_(cnodes, location_index(cube, rank, thread))].sum())
    assert found == pytest.approx(seconds * SCALE, rel=0.20), (prop, suffix, rank, thread)


def test_each_designed_property_is_charged_to_its_call_path_only(analyzed):
    # apart from noise, a designed property has no severity elsewhere
    cube, _ = analyzed
    for prop in {"mpi_latesender", "mpi_latebroadcast", "omp_ebarrier_wait", "omp_lock_contention_critical"}:
        values = np.asarray(cube.values[prop])
        designed = set()
        for p, suffix, *_ in PROGRAM_DESIGNED:
            if p == prop:
                designed.update(matching_cnodes(cube, suffix))
        elsewhere = values[[c for c in range(values.shape[0]) if c not in designed]].sum()
        assert elsewhere < 0.01, (prop, elsewhere)


def test_no_false_findings(analyzed):
    cube, _ = analyzed
    for prop in ("mpi_latereceiver", "mpi_latesender_wo", "mpi_wait_nxn", "mpi_earlyreduce", "omp_lock_contention_api"):
        assert cube.total(prop) < 0.01, prop


def test_cubex_gives_pycubexr_the_same_numbers(analyzed):
    cube, path = analyzed
    ours = read_cubex(str(path))
    with pycubexr.CubexParser(str(path)) as p:
        for prop in {d[0] for d in PROGRAM_DESIGNED}:
            mv = p.get_metric_values(p.get_metric_by_name(prop))
            for c in p.all_cnodes():
                theirs = np.asarray(mv.cnode_values(c, convert_to_exclusive=False), float)
                assert np.allclose(theirs, np.asarray(ours.values[prop])[c.id], rtol=1e-12, atol=0), (prop, c.id)
            assert float(np.asarray(ours.values[prop]).sum()) == pytest.approx(cube.total(prop), rel=1e-12)


def test_demo_as_dev_demo_runs_it(tmp_path, monkeypatch, capsys):
    # `./dev demo` passes no directory: the default is relative to the working directory
    if toolchain_missing():
        pytest.skip(f"cannot trace a real program: {toolchain_missing()}")
    from samples import demo

    monkeypatch.chdir(tmp_path)
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "Late Sender (mpi_latesender)" in out
    assert (tmp_path / "out" / "demo" / "hybrid_waits.cubex").is_file()
    assert (tmp_path / "out" / "demo" / "demo.json").is_file()
