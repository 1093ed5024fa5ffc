"""What survives a crash: every way a traced process can end abnormally, without MPI and under Open MPI and
MPICH (docs/runtime.md, "What survives a crash").

`samples/runtime/crash_scenarios.c`: two OpenMP threads each record STEPS user regions "step"; then the
only process (no MPI) or rank 1 of 2 (while rank 0 waits in a Barrier) ends by a signal, abort(), exit(3),
_exit(3), SIGKILL or MPI_Abort.  With a 64 KiB buffer (1638 records) every thread flushes to its spool
file several times before that.

* A process that reaches a handler (signals but SIGKILL, abort, exit, _exit, MPI_Abort; Open MPI's
  SIGTERM to the survivors) writes its trace: every step of every thread.
* A process killed by SIGKILL (the one that raises it; MPICH's survivors, which Hydra kills so) leaves
  its spool file: an unfinished trace holding every step but those of its last, unflushed buffer.
* Without MPI that is the -o path; an MPI rank writes `d.<rank>.elg`, and `expert-trace merge d.elg`
  makes one trace of the ranks' files.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, MPI_TOOLS, RUNTIME, SAMPLES, events, need, run
from tracefmt.layout import EventType as E
from tracefmt.validate import validate

pytestmark = pytest.mark.runtime

STEPS = 3000
BUFFER_RECORDS = 64 * 1024 // 40  # EXPERT_BUFFER_SIZE=64k
ENV = {"EXPERT_BUFFER_SIZE": "64k", "OMP_NUM_THREADS": "2"}
# Open MPI sends SIGKILL this many seconds after SIGTERM (and mpirun waits the whole time): a survivor's
# handler writes its trace in milliseconds
OMPI_ENV = dict(MPI_ENV, OMPI_MCA_odls_base_sigkill_timeout="1")
HANDLED = "no (the program ended abnormally)"
SPOOLED = "no (read from the spool file: the events flushed before the process ended)"


def steps_per_thread(trace, process):
    out = {}
    for loc in trace.defs.locations.values():
        if loc.process == process:
            out[loc.thread] = Counter(e[1] for e in events(trace, loc.id) if e[0] == E.ENTER)["step"]
    return out


def check_piece(trace, process, how_written):
    """One process's trace: all its steps if a handler wrote it, all but the last buffer's if it is the spool."""
    steps = steps_per_thread(trace, process)
    assert sorted(steps) == [0, 1]
    if how_written == "handler":
        assert steps == {0: STEPS, 1: STEPS}
    else:  # a thread loses at most its last buffer (each step is 2 records), and every thread flushed
        assert all(STEPS - BUFFER_RECORDS // 2 - 1 <= n < STEPS for n in steps.values()), steps


@pytest.fixture(scope="module")
def omp_program(tmp_path_factory, runtime_built):
    need("clang")
    d = tmp_path_factory.mktemp("crash_omp")
    run(["clang", "-fopenmp", "-g", f"-I{RUNTIME / 'include'}", str(SAMPLES / "crash_scenarios.c"), "-o", "crash"],
        cwd=d)
    return d / "crash"


@pytest.mark.parametrize("how", ["segv", "abort", "term", "exit", "_exit", "kill"])
def test_openmp_program(omp_program, tmp_path, how):
    p = run([str(EXPERT_RUN), "-o", "c.elg", str(omp_program), how, str(STEPS)], cwd=tmp_path, env=ENV, check=False)
    assert p.returncode != 0
    assert sorted(f.name for f in tmp_path.iterdir()) == ["c.elg"]  # no spool or temporary file left over
    with tracefmt.open(str(tmp_path / "c.elg")) as trace:
        if how in ("exit", "_exit"):  # a normal end, at-exit handlers or not: the whole trace, finished
            assert trace.complete and trace.defs.attributes["complete"] == "yes"
            assert [str(x) for x in validate(trace)] == []
            check_piece(trace, 0, "handler")
        elif how == "kill":
            assert not trace.header.finished and trace.defs.attributes["complete"] == SPOOLED
            check_piece(trace, 0, "spool")
        else:
            assert not trace.header.finished and trace.defs.attributes["complete"] == HANDLED
            check_piece(trace, 0, "handler")
            # the crash path closed what was open: the region that died, then the program root region
            exits = [e[1] for e in events(trace, trace.defs.location_id(0, 0)) if e[0] == E.EXIT]
            assert exits[-2:] == ["dying", "crash"]


def test_output_through_a_symbolic_link(omp_program, tmp_path):
    """A trace is written under a temporary name and renamed over its path, but never over a link (or a device
    such as /dev/null): that is written through, and the spool goes to $TMPDIR."""
    (tmp_path / "c.elg").symlink_to("real.elg")
    run([str(EXPERT_RUN), "-o", "c.elg", str(omp_program), "segv", str(STEPS)], cwd=tmp_path, env=ENV, check=False)
    assert (tmp_path / "c.elg").is_symlink() and sorted(f.name for f in tmp_path.iterdir()) == ["c.elg", "real.elg"]
    with tracefmt.open(str(tmp_path / "real.elg")) as trace:
        assert trace.defs.attributes["complete"] == HANDLED
        check_piece(trace, 0, "handler")


@pytest.fixture(scope="module", params=["ompi", "mpich"])
def mpi_program(request, tmp_path_factory, runtime_built):
    mpi = request.param
    need(MPI_TOOLS[mpi]["cc"])
    d = tmp_path_factory.mktemp(f"crash_{mpi}")
    run([MPI_TOOLS[mpi]["cc"], "-fopenmp", "-DWITH_MPI", "-g", f"-I{RUNTIME / 'include'}",
         str(SAMPLES / "crash_scenarios.c"), "-o", "crash"], cwd=d)
    return mpi, d / "crash"


@pytest.mark.parametrize("how", ["segv", "abort", "term", "exit", "_exit", "mpi_abort", "kill"])
def test_mpi_rank_dies(mpi_program, tmp_path, how):
    """Rank 1 of 2 dies while rank 0 waits in a Barrier.  Open MPI sends the survivor SIGTERM, so its handler
    writes; MPICH's Hydra sends SIGKILL, so the survivor's spool file is what remains of it."""
    mpi, exe = mpi_program
    env = dict(OMPI_ENV if mpi == "ompi" else MPI_ENV, **ENV)
    p = run(MPI_TOOLS[mpi]["run"] + ["2", str(EXPERT_RUN), "-o", "d.elg", str(exe), how, str(STEPS)], cwd=tmp_path,
            env=env, check=False)
    assert p.returncode != 0
    assert sorted(f.name for f in tmp_path.iterdir()) == ["d.0.elg", "d.1.elg"]
    written = {0: "handler" if mpi == "ompi" else "spool", 1: "spool" if how == "kill" else "handler"}
    for rank in (0, 1):
        with tracefmt.open(str(tmp_path / f"d.{rank}.elg")) as trace:
            assert not trace.header.finished
            assert trace.defs.attributes["complete"] == (HANDLED if written[rank] == "handler" else SPOOLED)
            assert sorted(trace.defs.processes) == [rank]
            check_piece(trace, rank, written[rank])
            if written[rank] == "handler":  # the MPI calls, closed where they were open
                ev = events(trace, trace.defs.location_id(rank, 0))
                mpi_calls = [e[1] for e in ev if e[0] == E.ENTER and e[1].startswith("MPI_")]
                assert mpi_calls == ["MPI_Init", "MPI_Barrier"] + (["MPI_Barrier"] if rank == 0 else
                                                                   ["MPI_Abort"] if how == "mpi_abort" else [])

    m = subprocess.run([sys.executable, "-m", "tracefmt.cli", "merge", "d.elg"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert m.returncode == 0, m.stderr
    assert m.stdout.startswith("d.elg: 2 process(es), 4 location(s), ") and "incomplete" in m.stdout
    with tracefmt.open(str(tmp_path / "d.elg")) as trace:
        assert not trace.header.finished and trace.defs.attributes["complete"].startswith("no (merged from 2 ")
        assert sorted((loc.process, loc.thread) for loc in trace.defs.locations.values()) == [(0, 0), (0, 1), (1, 0),
                                                                                           (1, 1)]
        for rank in (0, 1):
            check_piece(trace, rank, written[rank])
        world = [c for c in trace.defs.comms.values() if c.name == "MPI_COMM_WORLD"]
        assert len(world) == 1 and world[0].ranks == (0, 1)
        # regions open where a piece ends were closed: every location nests
        assert not [x for x in validate(trace) if "never left" in str(x)]
    if how == "kill":  # the merged trace analyses (as the crash trace it is: with --salvage)
        an = subprocess.run([sys.executable, "-m", "analyzer.cli.analyze", "--salvage", "-q", "d.elg", "-o", "d.cubex"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert an.returncode == 0, an.stderr
        assert (tmp_path / "d.cubex").stat().st_size > 0


def test_a_finished_mpi_run_leaves_one_trace(mpi_program, tmp_path):
    """A run that ends normally removes the per-rank traces an earlier crashed run left under the same name (they
    would be merged by mistake).  With the default buffer nothing is spooled, so no spool file replaces them."""
    mpi, exe = mpi_program
    for rank in (0, 1):
        (tmp_path / f"d.{rank}.elg").write_bytes(b"left by an earlier run")
    env = dict(OMPI_ENV if mpi == "ompi" else MPI_ENV, OMP_NUM_THREADS="2")
    run(MPI_TOOLS[mpi]["run"] + ["2", str(EXPERT_RUN), "-o", "d.elg", str(exe), "live", str(STEPS)], cwd=tmp_path,
        env=env)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["d.elg"]
    with tracefmt.open(str(tmp_path / "d.elg")) as trace:
        assert trace.complete and [str(x) for x in validate(trace)] == []
        for rank in (0, 1):
            check_piece(trace, rank, "handler")


# ---------------------------------------------------------------- names that are not UTF-8
LATIN1 = b"caf\xe9.dat"  # a file name from a Latin-1 shell: \xe9 is no UTF-8


@pytest.mark.parametrize("how", ["exit", "segv"])
def test_names_that_are_not_utf8(omp_program, tmp_path, how):
    """The runtime records a program argument and a region name as the bytes they are, on the normal and on
    the crash path; the trace reads (bytes that are no UTF-8 as surrogate escapes), analyses, and every
    output shows the byte as the text \\xe9."""
    p = subprocess.run([bytes(EXPERT_RUN), b"-o", b"n.elg", bytes(omp_program), how.encode(), b"10", LATIN1],
                       cwd=tmp_path, env=dict(os.environ, **ENV), capture_output=True, timeout=120)
    assert p.returncode != 0
    decoded = LATIN1.decode("utf-8", "surrogateescape")
    with tracefmt.open(str(tmp_path / "n.elg")) as trace:
        assert decoded in {r.name for r in trace.defs.regions.values()}
        assert trace.defs.attributes["command"].endswith(f"{how} 10 {decoded}")
        loc = trace.defs.location_id(0, 0)
        assert [e[1] for e in events(trace, loc) if e[0] == E.ENTER][-2:] == [decoded, "dying"]
    salvage = ["--salvage"] if how == "segv" else []
    info = subprocess.run([sys.executable, "-m", "tracefmt.cli", "info", *salvage, "n.elg"], cwd=tmp_path,
                          capture_output=True, timeout=120)
    assert info.returncode == 0, info.stderr
    assert b"command = " + bytes(omp_program) + b" " + how.encode() + b" 10 caf\\xe9.dat" in info.stdout
    assert b"\xe9" not in info.stdout
    if how == "segv":
        return
    an = subprocess.run([sys.executable, "-m", "analyzer.cli.analyze", "n.elg", "-o", "n.cubex", "--json", "n.json",
                         "--all"], cwd=tmp_path, capture_output=True, timeout=300)
    assert an.returncode == 0, an.stderr
    summary = (tmp_path / "n.json").read_bytes()
    assert b"\xe9" not in an.stdout + an.stderr + summary
    assert b'caf\\\\xe9.dat"' in summary  # a call path ending in the JSON text of caf\xe9.dat


def test_runtime_warnings_escape_what_is_not_printable(omp_program, tmp_path):
    """The runtime's own warning lines carry the user's bytes (an environment value, a path) escaped: no
    control character reaches the terminal and no byte that is not UTF-8."""
    env = {**os.environ, **ENV, "EXPERT_BUFFER_SIZE": "1\x1b[31m\udce9"}  # ESC and a Latin-1 byte
    p = subprocess.run([bytes(EXPERT_RUN), b"-o", b"w.elg", bytes(omp_program), b"exit", b"1"], cwd=tmp_path,
                       env={k.encode(): v.encode("utf-8", "surrogateescape") for k, v in env.items()},
                       capture_output=True, timeout=120)
    line = next(ln for ln in p.stderr.splitlines() if b"EXPERT_BUFFER_SIZE" in ln)
    assert line.endswith(b"ignoring EXPERT_BUFFER_SIZE=1\\x1b[31m\\xe9 (not a number)")
    assert b"\x1b" not in p.stderr and b"\xe9" not in p.stderr
