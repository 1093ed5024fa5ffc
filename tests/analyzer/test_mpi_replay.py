"""Distributed analysis: ``mpiexec -n K expert-analyze --mpi`` gives the serial JSON summary byte for byte.

K = 1 to 4 under Open MPI and MPICH on a trace of 5 processes (so shares are uneven), K = 3 on a trace
of 2 processes (one rank has an empty share).  The carrier on its own (pieces of a few bytes, failures):
tests/analyzer/test_share_networks.py.
"""

from __future__ import annotations

import subprocess

import mpi4py  # noqa: F401  (a test dependency: the ranks below import it; missing, it fails here loudly)
import pytest

import tracefmt
from analyzer.cli.analyze import main
from mpi_launch import MPIEXEC, launch
from random_hybrid_traces import random_builder
from tracefmt.layout import EventType

pytestmark = [pytest.mark.runtime,
              pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (Open MPI) on this machine")]


def _launch(mpi: str, k: int, argv: list[str], tmp) -> subprocess.CompletedProcess:
    return launch(mpi, k, argv, tmp)


def _mpiexec(k: int, args: list[str], mpi: str = "openmpi", tmp=None) -> subprocess.CompletedProcess:
    return _launch(mpi, k, ["-m", "analyzer.cli", "--mpi", *args], tmp)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    trace = d / "hybrid.elg"
    random_builder(21, n_ranks=5, n_threads=2, steps=30).write(trace)
    js = d / "serial.json"
    assert main([str(trace), "-j", "1", "-q", "--json", str(js), "-o", str(d / "serial.cubex")]) == 0
    return d, trace, js.read_bytes()


@pytest.mark.parametrize("mpi,k", [("openmpi", 1), ("openmpi", 2), ("openmpi", 3), ("openmpi", 4), ("mpich", 2),
                                   ("mpich", 4)])
def test_mpi_ranks_give_the_serial_json(serial, mpi, k):
    d, trace, want = serial
    js = d / f"mpi{k}_{mpi}.json"
    r = _mpiexec(k, [str(trace), "--json", str(js), "-o", str(d / f"mpi{k}_{mpi}.cubex")], mpi, d)
    assert r.returncode == 0, r.stderr
    assert js.read_bytes() == want
    # rank 0 alone prints the report
    assert r.stdout.count("Performance properties") == 1


def test_mpi_ranks_with_chosen_patterns_give_the_serial_json(serial):
    # the ranks keep only the fragments of the tables those patterns need, as the serial replay does
    d, trace, _ = serial
    chosen = ["--patterns", "mpi_latesender,omp_ibarrier_wait"]
    want = d / "serial_chosen.json"
    assert main([str(trace), "-j", "1", "-q", "--json", str(want), "-o", str(d / "serial_chosen.cubex"), *chosen]) == 0
    js = d / "mpi2_chosen.json"
    r = _mpiexec(2, [str(trace), "-q", "--json", str(js), "-o", str(d / "mpi2_chosen.cubex"), *chosen], tmp=d)
    assert r.returncode == 0, r.stderr
    assert js.read_bytes() == want.read_bytes()


def test_mpi_bad_trace_is_one_error_line_and_status_2(tmp_path):
    bad = tmp_path / "bad.elg"
    bad.write_bytes(b"\x89ELG\r\n\x1a\n" + b"\0" * 10)
    r = _mpiexec(2, [str(bad), "-q"])
    assert r.returncode == 2
    lines = [l for l in r.stderr.splitlines() if "expert-analyze" in l]
    assert len(lines) == 1 and "bad.elg" in lines[0] and "Traceback" not in r.stderr


def test_a_rank_with_an_empty_share(tmp_path):
    # 2 traced processes over 3 analysis ranks: the last one walks nothing and sends an empty share
    trace = tmp_path / "two.elg"
    random_builder(5, n_ranks=2, n_threads=2, steps=20).write(trace)
    want = tmp_path / "serial.json"
    assert main([str(trace), "-j", "1", "-q", "--json", str(want), "-o", str(tmp_path / "s.cubex")]) == 0
    js = tmp_path / "mpi3.json"
    r = _mpiexec(3, [str(trace), "-q", "--json", str(js), "-o", str(tmp_path / "m.cubex")], "openmpi", tmp_path)
    assert r.returncode == 0, r.stderr
    assert js.read_bytes() == want.read_bytes()


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_a_failing_rank_is_one_error_line_on_rank_0(tmp_path, mpi):
    # process 2 of 3 has time going backwards: the analysis rank that walks it fails, rank 0 says so in one
    # line and every rank ends (no hang)
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(3)]
    work = b.region("work")
    for r, loc in enumerate(locs):
        b.enter(loc, 0.0, "main")
        if r == 2:
            b.event(loc, 2.0, EventType.ENTER, a=work)
            b.event(loc, 1.5, EventType.EXIT, a=work)
        b.enter(loc, 3.0, "MPI_Barrier")
        b.exit(loc, 3.5, "MPI_Barrier")
        b.exit(loc, 4.0, "main")
    trace = tmp_path / "backwards.elg"
    b.write(trace)
    r = _mpiexec(3, [str(trace), "-q"], mpi, tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [l for l in r.stderr.splitlines() if "expert-analyze" in l]
    assert len(lines) == 1 and "backwards.elg" in lines[0] and "location 2" in lines[0], r.stderr
    assert "time goes backwards" in lines[0] and "Traceback" not in r.stderr


def test_mpi_ranks_give_the_serial_timeline(serial):
    # --timeline reads every table: rank 0 builds them from what the ranks send it, the waits stay per share
    d, trace, _ = serial
    want, got = d / "serial_timeline.json", d / "mpi_timeline.json"
    assert main([str(trace), "-j", "1", "-q", "--timeline", str(want), "-o", str(d / "t1.cubex")]) == 0
    r = _mpiexec(2, [str(trace), "-q", "--timeline", str(got), "-o", str(d / "t2.cubex")], "openmpi", d)
    assert r.returncode == 0, r.stderr
    assert got.read_bytes() == want.read_bytes()
