"""expert-run never loses or clobbers a trace (runtime/src/process.c, runtime/bin/expert-run).

Each launch mistake gets the message and the exit status that docs/runtime.md ("Launch mistakes")
documents:
* an MPI program started without mpirun: Open MPI's singleton starts `orted`, which inherits the
  preload; launcher helpers are not traced, so the program's own trace survives (exit 0);
* several processes of one MPI launch that make no MPI call: one trace per process, x.<rank>.elg,
  and one note from rank 0 (exit 0); a fork child never writes its parent's trace;
* an unwritable output: exit 2 before the program starts; if it only fails at the end, exit 74;
* a trace with no events, OpenMP on libgomp (--omp-runtime=native), no MPI in an MPI launch, a
  binary without debug information: one warning line that says what to do (the program's status);
* an MPI launcher given as the program: exit 2.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, SAMPLES, assert_valid, need, run
from tracefmt.layout import EventType, Paradigm

pytestmark = pytest.mark.runtime

LAUNCHERS = {"openmpi": ["mpirun.openmpi", "-np"], "mpich": ["mpiexec.mpich", "-n"]}


def expert(args, cwd, env=None, launcher=None):
    """expert-run ARGS (under `launcher` if given) without raising: the CompletedProcess."""
    cmd = (launcher or []) + [str(EXPERT_RUN), *args]
    return subprocess.run(cmd, cwd=cwd, env=dict(os.environ, **MPI_ENV, **(env or {})), capture_output=True,
                          text=True, timeout=120)


def notes(p):
    """the lines expert-run and the runtime wrote to stderr, less the one naming the OpenMP runtime
    (test_omp_runtime.py)"""
    return [line for line in p.stderr.splitlines()
            if line.startswith("expert-run") and not line.startswith("expert-run: OpenMP runtime: ")]


def n_events(trace):
    return sum(len(trace.events(int(loc))) for loc in trace.location_ids)


def paradigms(trace):
    regions = trace.defs.regions
    seen = set()
    for loc in trace.location_ids:
        ev = trace.events(int(loc))
        for i in range(len(ev)):
            if ev.type[i] == EventType.ENTER:
                seen.add(regions[int(ev.a[i])].paradigm)
    return seen


@pytest.fixture(scope="module")
def progs(runtime_built, tmp_path_factory):
    need("gcc")
    need("clang")
    d = tmp_path_factory.mktemp("launch")
    run(["clang", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp"], cwd=d)
    run(["gcc", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp_gcc"], cwd=d)
    run(["gcc", "-fopenmp", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp_nodebug"], cwd=d)
    run(["clang", "-fopenmp", "-g", str(SAMPLES / "lose_output.c"), "-o", "lose"], cwd=d)
    run(["clang", "-fopenmp", "-g", str(SAMPLES / "fork_child.c"), "-o", "fork_child"], cwd=d)
    for mpi in LAUNCHERS:
        if shutil.which(f"mpicc.{mpi}"):
            run([f"mpicc.{mpi}", "-fopenmp", "-g", "-O1", str(SAMPLES / "hybrid.c"), "-o", f"hybrid_{mpi}"], cwd=d)
            run([f"mpicc.{mpi}", "-DWITH_MPI", "-fopenmp", "-g", str(SAMPLES / "lose_output.c"), "-o", f"lose_{mpi}"],
                cwd=d)
    return d


# ---------------------------------------------------------------- helpers of MPI launchers
@pytest.mark.parametrize("mpi", list(LAUNCHERS))
def test_mpi_program_without_launcher_keeps_its_trace(progs, tmp_path, mpi):
    need(f"mpicc.{mpi}")
    p = expert(["-o", "x.elg", str(progs / f"hybrid_{mpi}")], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert notes(p) == []
    assert sorted(f.name for f in tmp_path.iterdir()) == ["x.elg"]  # no helper wrote anything
    trace = tracefmt.open(str(tmp_path / "x.elg"))
    assert_valid(trace)
    assert trace.defs.attributes["command"].endswith(f"hybrid_{mpi}")  # not orted's 0-event trace
    assert Paradigm.MPI in paradigms(trace) and n_events(trace) > 50


def test_launcher_helpers_are_not_traced(progs, runtime_built, tmp_path):
    # a program named like a launcher helper writes no trace, even preloaded by hand
    for name in ("orted", "hydra_pmi_proxy", "mpiexec.hydra", "prted"):
        shutil.copy(progs / "omp", tmp_path / name)
        env = dict(os.environ, LD_PRELOAD=str(runtime_built / "libexpert.so"),
                   EXPERT_TRACE_FILE=str(tmp_path / f"{name}.elg"))
        env.pop("EXPERT_RUN_PID", None)
        subprocess.run([str(tmp_path / name)], env=env, capture_output=True, timeout=60, check=True)
        assert not (tmp_path / f"{name}.elg").exists(), name


def test_launcher_as_the_program_is_refused(progs, tmp_path):
    for launcher in ("mpirun", "mpiexec.mpich"):
        if not shutil.which(launcher):
            continue
        p = expert(["-o", "x.elg", launcher, "-n", "2", str(progs / "omp")], cwd=tmp_path)
        assert p.returncode == 2
        assert notes(p) == [f"expert-run: {launcher} is an MPI launcher: start the program under it instead "
                            "(mpirun -np N expert-run [OPTIONS] PROGRAM)"]
        assert not (tmp_path / "x.elg").exists()


# ---------------------------------------------------------------- two processes, one file
@pytest.mark.parametrize("mpi", list(LAUNCHERS))
def test_processes_without_mpi_write_one_trace_each(progs, tmp_path, mpi):
    need(f"mpicc.{mpi}")
    p = expert(["-o", "x.elg", str(progs / "omp")], cwd=tmp_path, launcher=LAUNCHERS[mpi] + ["2"])
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["x.0.elg", "x.1.elg"]
    lines = notes(p)
    assert len(lines) == 1, lines
    assert "no MPI call was traced in these 2 processes" in lines[0]
    assert f"({tmp_path}/x.0.elg ... {tmp_path}/x.1.elg)" in lines[0] and "docs/runtime.md" in lines[0]
    for rank in (0, 1):
        trace = tracefmt.open(str(tmp_path / f"x.{rank}.elg"))
        assert_valid(trace)
        assert len(trace.location_ids) == 3 and Paradigm.OPENMP in paradigms(trace)


def test_one_process_of_an_mpi_launch_without_mpi_is_told(progs, tmp_path):
    need("mpirun.openmpi")
    p = expert(["-o", "x.elg", str(progs / "omp")], cwd=tmp_path, launcher=["mpirun.openmpi", "-np", "1"])
    assert p.returncode == 0
    lines = notes(p)
    assert len(lines) == 1 and "started by an MPI launcher, but no MPI call was traced" in lines[0], lines
    assert_valid(tracefmt.open(str(tmp_path / "x.elg")))


def test_fork_child_does_not_overwrite_the_parents_trace(progs, tmp_path):
    p = expert(["-o", "f.elg", str(progs / "fork_child")], cwd=tmp_path)  # returns once the child is done
    assert p.returncode == 0 and "child done" in p.stdout
    assert sorted(f.name for f in tmp_path.iterdir()) == ["f.elg"]
    trace = tracefmt.open(str(tmp_path / "f.elg"))
    assert_valid(trace)
    assert len(trace.location_ids) == 3  # the parent's second region (3 threads) came after the fork


# ---------------------------------------------------------------- unwritable output
def test_unwritable_output_is_refused_before_the_program_starts(progs, tmp_path):
    p = expert(["-o", "/nonexistent/dir/x.elg", "touch", str(tmp_path / "ran")], cwd=tmp_path)
    assert p.returncode == 2
    assert notes(p) == ["expert-run: cannot write the trace /nonexistent/dir/x.elg: directory /nonexistent/dir "
                        "does not exist (create it, or choose another path with -o)"]
    assert not (tmp_path / "ran").exists()
    (tmp_path / "adir").mkdir()
    p = expert(["-o", "adir", "touch", str(tmp_path / "ran")], cwd=tmp_path)
    assert p.returncode == 2 and "it is a directory" in p.stderr and not (tmp_path / "ran").exists()


def test_output_lost_at_the_end_gives_a_non_zero_status(progs, tmp_path):
    (tmp_path / "d").mkdir()
    p = expert(["-o", "d/x.elg", str(progs / "lose"), "d"], cwd=tmp_path)
    assert p.returncode == 74
    assert notes(p)[0].endswith(f"cannot write the trace {tmp_path}/d/x.elg: No such file or directory "
                                "(choose a writable path with -o or EXPERT_TRACE_FILE)")


@pytest.mark.parametrize("mpi", list(LAUNCHERS))
def test_mpi_output_lost_at_the_end_gives_a_non_zero_status(progs, tmp_path, mpi):
    # rank 0 cannot open the file but must still take the other ranks' events (80 KB: not eager)
    need(f"mpicc.{mpi}")
    (tmp_path / "d").mkdir()
    p = expert(["-o", "d/x.elg", str(progs / f"lose_{mpi}"), "d"], cwd=tmp_path, launcher=LAUNCHERS[mpi] + ["2"])
    assert p.returncode == 74, p.stderr  # both launchers pass rank 0's status on
    assert sum("cannot write the trace" in line for line in notes(p)) == 1, p.stderr
    assert "UCX" not in p.stderr  # no event message was left unreceived


# ---------------------------------------------------------------- silent traces
def test_native_libgomp_run_warns_that_it_has_no_events(progs, tmp_path):
    p = expert(["--omp-runtime=native", "-o", "n.elg", str(progs / "omp_gcc")], cwd=tmp_path)
    assert p.returncode == 0
    lines = notes(p)
    assert len(lines) == 1, lines
    assert f"{tmp_path}/n.elg has no events: its OpenMP ran on GCC's libgomp, which has no OMPT" in lines[0]
    assert "without --omp-runtime=native" in lines[0] and "expert-cc" in lines[0]
    # nothing but the program root region (named after the executable): its ENTER and EXIT
    trace = tracefmt.open(str(tmp_path / "n.elg"))
    assert n_events(trace) == 2
    ev = trace.events(int(trace.location_ids[0]))
    assert [EventType(int(t)) for t in ev.type] == [EventType.ENTER, EventType.EXIT]
    assert {trace.defs.regions[int(a)].name for a in ev.a} == {"omp_gcc"}
    # the same program on libomp (the default) records its constructs and says nothing
    p = expert(["-o", "l.elg", str(progs / "omp_gcc")], cwd=tmp_path)
    assert p.returncode == 0 and notes(p) == []


def test_program_without_events_is_told_what_to_do(progs, tmp_path):
    p = expert(["-o", "t.elg", "true"], cwd=tmp_path)
    assert p.returncode == 0
    lines = notes(p)
    assert len(lines) == 1 and "t.elg has no events: the program made no MPI call, OpenMP construct" in lines[0]
    assert "docs/runtime.md" in lines[0]


def test_binary_without_debug_information_is_told_to_use_g(progs, tmp_path):
    p = expert(["-o", "g.elg", str(progs / "omp_nodebug")], cwd=tmp_path)
    assert p.returncode == 0
    assert notes(p) == [f"expert-run: {progs / 'omp_nodebug'} has no debug information: its OpenMP constructs and "
                        "functions will have no source file and line (rebuild it with -g)"]
    p = expert(["-o", "g.elg", str(progs / "omp_gcc")], cwd=tmp_path)
    assert notes(p) == []
