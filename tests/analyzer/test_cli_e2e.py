"""expert-analyze end to end on the demo trace: designed waits in the right place, files that readers accept."""

from __future__ import annotations

import json

import numpy as np
import pycubexr
import pytest

from analyzer.cli.analyze import main
from samples.demo import DESIGNED, build_demo_trace


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    trace = d / "demo.elg"
    build_demo_trace().write(trace)
    return d, trace


def _loc(cube, rank, thread):
    return next(i for i, l in enumerate(cube.locations) if (l.rank, l.thread) == (rank, thread))


def test_cli_reports_every_designed_wait(demo, capsys):
    d, trace = demo
    rc = main([str(trace), "--json", str(d / "r.json"), "--hdf5", str(d / "r.h5"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Late Sender (mpi_latesender)" in out and "main/MPI_Bcast" in out
    from analyzer.cube import read_cubex

    assert str(trace).endswith(".elg")
    cube = read_cubex(str(trace)[: -len(".elg")] + ".cubex")  # app.elg -> app.cubex
    for prop, path, rank, thread, sec in DESIGNED:
        rows = cube.find_cnodes(path)
        got = float(np.asarray(cube.values[prop])[rows, _loc(cube, rank, thread)].sum())
        assert got == pytest.approx(sec, abs=1e-9), (prop, path, rank, thread)
        # and nowhere else
        assert float(np.asarray(cube.values[prop]).sum()) == pytest.approx(
            sum(s for p, *_, s in DESIGNED if p == prop), abs=1e-9)
    js = json.loads((d / "r.json").read_text())
    assert js["metrics"]["mpi_latesender"]["total"] == pytest.approx(0.5)
    assert (d / "r.h5").stat().st_size > 0


def test_cubex_opens_in_pycubexr_with_the_same_numbers(demo):
    d, trace = demo
    out = d / "p.cubex"
    assert main([str(trace), "-o", str(out), "-q"]) == 0
    from analyzer.cube import read_cubex

    ours = read_cubex(str(out))
    with pycubexr.CubexParser(str(out)) as p:
        for name in ("mpi_latesender", "mpi_barrier_wait", "mpi_latebroadcast", "time"):
            m = p.get_metric_by_name(name)
            mv = p.get_metric_values(m)
            total = sum(float(np.sum(mv.cnode_values(c, convert_to_exclusive=False))) for c in p.all_cnodes())
            assert total == pytest.approx(float(np.asarray(ours.values[name]).sum()), rel=1e-9)


def test_pattern_selection(demo, tmp_path, capsys):
    _, trace = demo
    out = tmp_path / "sel.cubex"
    assert main([str(trace), "-o", str(out), "--patterns", "mpi_latesender", "-q"]) == 0
    from analyzer.cube import read_cubex

    names = read_cubex(str(out)).metric_names
    assert "mpi_latesender" in names and "mpi_point2point" in names and "time" in names
    assert "mpi_barrier_wait" not in names


@pytest.mark.parametrize("content", [b"", b"\x89ELG\r\n\x1a\n" + b"\0" * 20, b"not a trace at all" * 10])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content):
    bad = tmp_path / "bad.elg"
    bad.write_bytes(content)
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("expert-analyze: error:") and "bad.elg" in err[0]


def test_missing_file_and_unknown_pattern(demo, tmp_path, capsys):
    _, trace = demo
    assert main([str(tmp_path / "nope.elg")]) == 2
    assert main([str(trace), "-o", str(tmp_path / "x.cubex"), "--patterns", "mpi_latesendr"]) == 2
    err = capsys.readouterr().err
    assert "nope.elg" in err and "mpi_latesender" in err


def test_list_patterns_needs_no_trace_and_names_every_property(capsys):
    assert main(["--list-patterns"]) == 0
    out = capsys.readouterr().out
    names = {line.split()[0] for line in out.splitlines()}
    assert {"time", "mpi_latesender", "omp_ibarrier_wait", "omp_lock_contention_critical"} <= names
    assert out.splitlines()[0].startswith("time ")  # the tree starts at its root


def test_unknown_pattern_points_to_the_list(demo, capsys):
    _, trace = demo
    assert main([str(trace), "--patterns", "no_such_pattern", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown pattern 'no_such_pattern'" in err and "--list-patterns" in err


def test_missing_trace_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2 and "required: trace" in capsys.readouterr().err
