"""The text report of expert-analyze: hidden rows (absent paradigm, not measured), --all, "n/a" for unmeasured
properties (also in the cube files), and a worst-properties list whose figures are all own shares."""

from __future__ import annotations

import io
import json

import h5py
import pytest

import tracefmt
from analyzer.analyze import analyze, select_patterns
from analyzer.cli.analyze import main
from analyzer.cli.text_report import report
from analyzer.cube import read_cubex, read_json

FS_REASON = "the trace has no cache-miss and access counters, which EXPERT_METRICS records"


def mpi_trace():
    """Rank 0 waits 2 s in MPI_Recv [1, 4] for rank 1's MPI_Send [3, 3.5]; both run main [0, 10]."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "main"); b.enter(r1, 0.0, "main")
    b.enter(r1, 3.0, "MPI_Send"); b.send(r1, 3.2, dest=0, tag=1, nbytes=8); b.exit(r1, 3.5, "MPI_Send")
    b.enter(r0, 1.0, "MPI_Recv"); b.recv(r0, 3.9, source=1, tag=1, nbytes=8); b.exit(r0, 4.0, "MPI_Recv")
    b.exit(r0, 10.0, "main"); b.exit(r1, 10.0, "main")
    return b


def omp_trace(counters=False, mpi=False, pthread=False):
    """One process, two threads: a parallel region [1, 5] with an explicit barrier; optionally cache counters
    (false sharing measured), an MPI_Barrier of the one rank and a pthread_mutex_lock call."""
    b = tracefmt.TraceBuilder()
    m, w = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    P = "!$omp parallel @p.c:3"
    B = "!$omp barrier @p.c:5"
    b.enter(m, 0.0, "main")
    if counters:
        b.counter(m, 0.0, "PAPI_L1_DCM", 0); b.counter(m, 0.0, "PAPI_SR_INS", 0)
    b.fork(m, 1.0, 1, 2)
    b.enter(m, 1.0, P, team=1); b.enter(w, 1.0, P, team=1)
    b.barrier(m, 2.0, 4.0); b.barrier(w, 3.9, 4.0)
    b.exit(m, 5.0, P); b.exit(w, 5.0, P)
    b.join(m, 5.0, 1, 2)
    if mpi:
        b.collective(m, 6.0, 6.5, "MPI_Barrier")
    if pthread:
        b.enter(m, 7.0, "pthread_mutex_lock"); b.exit(m, 7.1)
    b.exit(m, 10.0, "main")
    if counters:
        b.counter(m, 10.0, "PAPI_L1_DCM", 50); b.counter(m, 10.0, "PAPI_SR_INS", 1000)
    return b


def effective_paradigms():
    """unique name -> paradigm of every built-in property, inherited along the metric tree."""
    pats = select_patterns(None, plugins=False)
    by_name = {p.name: p for p in pats}
    out = {}

    def par(name):
        if name not in out:
            p = by_name[name]
            out[name] = p.paradigm or (par(p.parent) if p.parent in by_name else None)
        return out[name]

    for p in pats:
        par(p.name)
    return out


def text(cube, **kw) -> str:
    buf = io.StringIO()
    report(cube, out=buf, **kw)
    return buf.getvalue()


def test_pure_mpi_hides_openmp_rows_and_the_unmeasured_property():
    cube = analyze(mpi_trace().build(), plugins=False)
    out = text(cube)
    par = effective_paradigms()
    n_omp = sum(1 for n, p in par.items() if p == "openmp" and n != "omp_false_sharing")
    n_pth = sum(1 for p in par.values() if p == "pthread")
    assert f"{n_omp + n_pth + 1} properties hidden: {n_omp} OpenMP (the trace has no OpenMP construct), {n_pth} " \
           f"POSIX threads (the trace has no POSIX threads call), 1 not measured " \
           f"(omp_false_sharing: {FS_REASON}); --all shows them\n" in out
    assert out.count("properties hidden") == 1
    for name, p in par.items():
        assert (f"({name})" in out) == (p not in ("openmp", "pthread")), name
    assert "Late Sender (mpi_latesender)" in out


def test_all_shows_every_row_and_unmeasured_as_n_a():
    cube = analyze(mpi_trace().build(), plugins=False)
    out = text(cube, show_all=True)
    assert "hidden" not in out
    tree = out[: out.index("Worst properties")]
    for name in effective_paradigms():
        assert tree.count(f"({name})") == 1, name
    line = next(l for l in out.splitlines() if "(omp_false_sharing)" in l)
    assert line.split("(omp_false_sharing)")[1].split() == ["n/a", "(not", "measured:", *f"{FS_REASON})".split()]
    omp = next(l for l in out.splitlines() if "(omp_time)" in l)
    assert omp.split()[-4:] == ["0.000000", "s", "0.00", "%"]


def test_pure_openmp_hides_mpi_rows():
    cube = analyze(omp_trace().build(), plugins=False)
    out = text(cube)
    par = effective_paradigms()
    n_mpi = sum(1 for p in par.values() if p == "mpi")
    n_pth = sum(1 for p in par.values() if p == "pthread")
    assert f"{n_mpi + n_pth + 1} properties hidden: {n_mpi} MPI (the trace has no MPI call), {n_pth} POSIX threads " \
           f"(the trace has no POSIX threads call), 1 not measured " in out
    assert "(mpi_latesender)" not in out and "(bytes)" not in out and "(omp_ebarrier_wait)" in out


def test_everything_measured_hides_nothing():
    cube = analyze(omp_trace(counters=True, mpi=True, pthread=True).build(), plugins=False)
    assert cube.not_measured == {}
    assert not [k for k in cube.attrs if "not-measured" in k or "absent" in k]
    out = text(cube)
    assert "hidden" not in out and "n/a" not in out
    assert "(omp_false_sharing)" in out and "(mpi_barrier_wait)" in out


def test_unmeasured_property_is_left_out_of_the_cube_files(tmp_path, capsys):
    trace = tmp_path / "mpi.elg"
    mpi_trace().write(trace)
    assert main([str(trace), "-o", str(tmp_path / "r.cubex"), "--json", str(tmp_path / "r.json"),
                 "--hdf5", str(tmp_path / "r.h5"), "--no-plugins", "-q"]) == 0
    doc = read_json(tmp_path / "r.json")
    assert "omp_false_sharing" not in doc["metrics"]
    assert doc["not_measured"] == {"omp_false_sharing": {"display_name": "False Sharing (excess cache misses)",
                                                         "parent": None, "unit": "occ", "reason": FS_REASON}}
    assert "omp_time" in doc["metrics"]  # absent paradigm: a true zero, kept
    cube = read_cubex(str(tmp_path / "r.cubex"))
    assert "omp_false_sharing" not in cube.metric_names
    assert cube.attrs["expert-analyze::not-measured::omp_false_sharing"] == FS_REASON
    omp = cube.attrs["expert-analyze::absent::openmp"].split()
    assert "omp_time" in omp and "omp_idle_threads" in omp and "omp_false_sharing" not in omp
    with h5py.File(tmp_path / "r.h5") as f:
        assert "omp_false_sharing" not in [n.decode() if isinstance(n, bytes) else n for n in f["metrics/name"][()]]
    # a report of the cube read back still knows what was hidden and why
    assert f"1 not measured (omp_false_sharing: {FS_REASON})" in text(cube)


def test_cli_all_flag(tmp_path, capsys):
    trace = tmp_path / "mpi.elg"
    mpi_trace().write(trace)
    assert main([str(trace), "-o", str(tmp_path / "r.cubex"), "--no-plugins", "--all"]) == 0
    out = capsys.readouterr().out
    assert "(omp_time)" in out and "hidden" not in out
    assert main([str(trace), "-o", str(tmp_path / "r.cubex"), "--no-plugins"]) == 0
    out = capsys.readouterr().out
    assert "(omp_time)" not in out and "; --all shows them" in out


def test_worst_list_gives_own_shares_under_an_own_share_header():
    cube = analyze(mpi_trace().build(), plugins=False)
    out = text(cube)
    worst = out[out.index("Worst properties"):].splitlines()
    assert worst[0] == ("Worst properties by their own share of time (a property without its sub-properties), "
                        "with the call paths and locations that hold that share")
    # time 20 s; Late Sender 2 s at MPI_Recv; Point-to-point's own share: MPI_Recv 3 - 2, MPI_Send 0.5
    assert worst[1:] == [
        "",
        "  Late Sender (mpi_latesender): own share 2.000000 s, 10.00 % of time",
        "       own share  % of time  call path",
        "      2.000000 s    10.00 %  main/MPI_Recv",
        "    own share by location: rank 0 thread 0 2.000000 s",
        "",
        "  Point-to-point (mpi_point2point): own share 1.500000 s, 7.50 % of time",
        "       own share  % of time  call path",
        "      1.000000 s     5.00 %  main/MPI_Recv",
        "      0.500000 s     2.50 %  main/MPI_Send",
        "    own share by location: rank 0 thread 0 1.000000 s, rank 1 thread 0 0.500000 s",
    ]
