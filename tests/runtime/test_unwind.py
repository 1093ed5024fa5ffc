"""Call paths for uninstrumented programs (EXPERT_UNWIND, runtime/src/unwind.c).

samples/runtime/unwind_hybrid.c is built without -finstrument-functions; its call structure (see
the file's header) is what the stack walks must reconstruct.  Expected counts per rank, from the
source: main and solver entered once; compute, exchange and the outlined parallel function three
times (one per iteration; exchange leaves and comes back because compute runs in between).
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

import analyzer
import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, SAMPLES, assert_valid, events, need, run
from tracefmt.layout import EventType, Paradigm, Role

pytestmark = pytest.mark.runtime

# every call path starts at the program root region, named after the executable ("uh")
MPI_PATHS = {
    "uh/main/MPI_Init_thread",
    "uh/main/solver/exchange/MPI_Irecv",
    "uh/main/solver/exchange/MPI_Isend",
    "uh/main/solver/exchange/MPI_Waitall",
    "uh/main/solver/MPI_Allreduce",
    "uh/main/MPI_Barrier",
    "uh/main/MPI_Finalize",
}


@pytest.fixture(scope="module")
def unwind_build(runtime_built, tmp_path_factory):
    need("mpicc.openmpi")
    d = tmp_path_factory.mktemp("unwind")
    # -O1 without sibling calls: a tail call would replace its caller's frame (documented limitation)
    run(["mpicc.openmpi", "-fopenmp", "-g", "-O1", "-fno-optimize-sibling-calls",
         str(SAMPLES / "unwind_hybrid.c"), "-o", "uh"], cwd=d)
    return d


def trace_with(d, name, **env):
    run(["mpirun.openmpi", "-np", "2", str(EXPERT_RUN), "-o", f"{name}.elg", "./uh"], cwd=d,
        env=dict(MPI_ENV, **env))
    return d / f"{name}.elg"


@pytest.fixture(scope="module")
def unwound(unwind_build):
    return trace_with(unwind_build, "libunwind", EXPERT_UNWIND="1")


def test_unwound_trace_is_valid(unwound):
    trace = tracefmt.open(str(unwound))
    assert_valid(trace)
    assert len(trace.location_ids) == 4


def test_mpi_calls_sit_under_the_program_call_paths(unwound):
    paths = set(analyzer.analyze(str(unwound)).callpaths)
    assert MPI_PATHS <= paths, sorted(paths)
    # no MPI call is left directly under the program root
    assert not [p for p in paths if re.fullmatch(r"uh/MPI_\w+", p)]
    # nor anything of the start-up code or the libraries
    assert {p.split("/")[0] for p in paths} == {"uh"}
    assert {p.split("/")[1] for p in paths if "/" in p} == {"main"}
    assert not [p for p in paths if re.search(r"(^|/)(_start|__libc|PMPI_|ompi_|__kmp|GOMP_)", p)]


def test_openmp_events_sit_inside_the_outlined_function(unwound):
    paths = analyzer.analyze(str(unwound)).callpaths
    pattern = re.compile(r"^uh/main/solver/compute/!\$omp parallel @unwind_hybrid\.c:\d+/compute\._omp_fn\.0"
                         r"/team_barrier/!\$omp barrier @unwind_hybrid\.c:\d+$")
    assert [p for p in paths if pattern.match(p)], paths


def test_frame_counts_and_region_kind(unwound):
    trace = tracefmt.open(str(unwound))
    regions = trace.defs.regions
    for loc, info in trace.defs.locations.items():
        entered = Counter(e[1] for e in events(trace, int(loc)) if e[0] == EventType.ENTER)
        if info.thread == 0:
            assert (entered["main"], entered["solver"], entered["compute"], entered["exchange"]) == (1, 1, 3, 3)
        else:  # a worker knows only the frames inside the outlined function
            assert entered["main"] == entered["solver"] == entered["compute"] == entered["exchange"] == 0
        assert entered["compute._omp_fn.0"] == 3 and entered["team_barrier"] == 3
    # resolved like -finstrument-functions: the function's name, file and the line it is defined on
    source = (SAMPLES / "unwind_hybrid.c").read_text().splitlines()
    for name in ("main", "solver", "exchange", "team_barrier"):
        (r,) = [r for r in regions.values() if r.name == name]
        assert (r.paradigm, r.role) == (Paradigm.COMPILER, Role.FUNCTION)
        assert trace.defs.files[r.file].endswith("unwind_hybrid.c")
        # GCC gives a function's first line as its name's line, or the opening brace's below it
        head = " ".join(source[r.begin_line - 2:r.begin_line])
        assert re.search(rf"\b{name}\(", head), (name, r.begin_line)


def test_worker_frame_opens_after_the_parallel_region(unwound):
    trace = tracefmt.open(str(unwound))
    for loc, info in trace.defs.locations.items():
        if info.thread == 0:
            continue
        names = [e[1] for e in events(trace, int(loc)) if e[0] == EventType.ENTER]
        assert names[0].startswith("!$omp parallel") and names[1] == "compute._omp_fn.0"


def test_glibc_backtrace_walker_gives_the_same_call_paths(unwind_build, unwound):
    other = trace_with(unwind_build, "backtrace", EXPERT_UNWIND="backtrace")
    assert_valid(tracefmt.open(str(other)))
    assert set(analyzer.analyze(str(other)).callpaths) == set(analyzer.analyze(str(unwound)).callpaths)


def test_filter_hides_a_frame_and_no_unwinding_without_the_variable(unwind_build, tmp_path):
    filt = tmp_path / "filter"
    filt.write_text("exchange\n")
    filtered = trace_with(unwind_build, "filtered", EXPERT_UNWIND="1", EXPERT_FILTER=str(filt))
    paths = set(analyzer.analyze(str(filtered)).callpaths)
    assert "uh/main/solver/MPI_Waitall" in paths and not [p for p in paths if "exchange" in p]
    plain = tracefmt.open(str(trace_with(unwind_build, "plain")))
    assert not [r for r in plain.defs.regions.values() if r.paradigm == Paradigm.COMPILER]


@pytest.mark.parametrize("compiler,source", [("clang", "omp_constructs.c"), ("gcc", "omp_nowait_end.c")])
def test_openmp_programs_keep_valid_nesting_with_frames(runtime_built, tmp_path, compiler, source):
    # every construct kind, held loop ends and nowait constructs (clang, and GCC code on libomp):
    # frames entered inside constructs must be closed before them
    need(compiler)
    run([compiler, "-fopenmp", "-g", "-O1", str(SAMPLES / source), "-o", "prog"], cwd=tmp_path)
    run([str(EXPERT_RUN), "--unwind", "-o", "prog.elg", "./prog"], cwd=tmp_path, env={"OMP_NUM_THREADS": "3"})
    trace = tracefmt.open(str(tmp_path / "prog.elg"))
    assert_valid(trace)
    outlined = re.compile(r"^(\.omp_outlined\.|main\._omp_fn\.\d+)")
    for loc in trace.location_ids:
        names = [e[1] for e in events(trace, int(loc)) if e[0] == EventType.ENTER]
        assert any(outlined.match(n) for n in names), names  # each thread's frames start in the outlined function
        assert "main" not in names or trace.defs.locations[int(loc)].thread == 0
