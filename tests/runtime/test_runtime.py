"""The C tracing runtime end to end: build it, trace small programs, read the traces with tracefmt.

Expected values come from the sample programs' source (samples/runtime/*), counted by hand.
"""
from __future__ import annotations

from collections import Counter

import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, RUNTIME, SAMPLES, assert_valid, events, need, run
from tracefmt.layout import EventType, LockKind, Paradigm, Role

pytestmark = pytest.mark.runtime


# ---------------------------------------------------------------- OpenMP
@pytest.fixture(scope="module")
def omp_trace(runtime_built, tmp_path_factory):
    need("clang")
    d = tmp_path_factory.mktemp("omp")
    run(["clang", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp"], cwd=d)
    run([str(EXPERT_RUN), "-o", "omp.elg", "./omp"], cwd=d)
    return tracefmt.open(str(d / "omp.elg"))


def test_omp_trace_is_valid_and_has_three_threads(omp_trace):
    assert_valid(omp_trace)
    assert len(omp_trace.location_ids) == 3
    assert {loc.thread for loc in omp_trace.defs.locations.values()} == {0, 1, 2}


def test_omp_fork_join_team_size(omp_trace):
    ev = events(omp_trace, 0)
    forks = [e for e in ev if e[0] == EventType.OMP_FORK]
    joins = [e for e in ev if e[0] == EventType.OMP_JOIN]
    assert [f[4] for f in forks] == [3, 3]  # c = team size
    assert [j[4] for j in joins] == [3, 3]
    assert [f[2] for f in forks] == [j[2] for j in joins]  # same team ids
    for loc in (1, 2):
        assert not [e for e in events(omp_trace, loc) if e[0] in (EventType.OMP_FORK, EventType.OMP_JOIN)]


def test_omp_parallel_enter_carries_team_and_thread_number(omp_trace):
    first_team = [e for e in events(omp_trace, 0) if e[0] == EventType.OMP_FORK][0][2]
    seen = set()
    for loc in omp_trace.location_ids:
        par = [e for e in events(omp_trace, int(loc)) if e[0] == EventType.ENTER and e[1].startswith("!$omp parallel")]
        assert len(par) == 2
        assert par[0][4] == first_team
        seen.add(par[0][5])
    assert seen == {0, 1, 2}


def test_omp_constructs_counted_per_thread(omp_trace):
    for loc in omp_trace.location_ids:
        names = Counter(e[1].split(" @")[0] for e in events(omp_trace, int(loc)) if e[0] == EventType.ENTER)
        assert names["!$omp for"] == 2
        assert names["!$omp barrier"] == 1
        assert names["!$omp critical"] == 1 and names["!$omp critical sblock"] == 1
        assert names["omp_set_lock"] == 1 and names["omp_unset_lock"] == 1
        assert names["!$omp single"] == 1
        assert names["!$omp sections"] == 1
        # implicit barriers: for, single, sections, and the end of both parallel regions
        assert names["!$omp ibarrier"] == 5
    masters = sum(
        1 for loc in omp_trace.location_ids for e in events(omp_trace, int(loc))
        if e[0] == EventType.ENTER and e[1].startswith("!$omp master"))
    assert masters == 1


def test_omp_region_roles_and_source_lines(omp_trace):
    regions = {r.name: r for r in omp_trace.defs.regions.values()}
    loops = [r for n, r in regions.items() if n.startswith("!$omp for @omp_constructs.c:")]
    assert len(loops) == 2 and all(r.role == Role.OMP_LOOP and r.paradigm == Paradigm.OPENMP for r in loops)
    assert regions["!$omp barrier @omp_constructs.c:20"].role == Role.OMP_BARRIER
    assert any(n.startswith("!$omp ibarrier") and r.role == Role.OMP_IMPLICIT_BARRIER for n, r in regions.items())
    assert regions["!$omp parallel @omp_constructs.c:14"].role == Role.OMP_PARALLEL


def test_omp_loop_barrier_nests_inside_loop_and_nowait_does_not(omp_trace):
    for loc in omp_trace.location_ids:
        ev = [e for e in events(omp_trace, int(loc)) if e[0] in (EventType.ENTER, EventType.EXIT, EventType.OMP_COLLEXIT)]
        i = next(k for k, e in enumerate(ev) if e[0] == EventType.ENTER and e[1].startswith("!$omp for"))
        # ENTER for, ENTER ibarrier, COLLEXIT ibarrier, EXIT for
        assert ev[i + 1][0] == EventType.ENTER and ev[i + 1][1].startswith("!$omp ibarrier")
        assert ev[i + 2][0] == EventType.OMP_COLLEXIT
        assert ev[i + 3][0] == EventType.EXIT and ev[i + 3][1] == ev[i][1]
        # the nowait loop closes before the explicit barrier
        assert ev[i + 4][1].startswith("!$omp for") and ev[i + 5][0] == EventType.EXIT
        assert ev[i + 6][1].startswith("!$omp barrier")


def test_omp_barrier_exits_carry_team(omp_trace):
    for loc in omp_trace.location_ids:
        teams = {e[3] for e in events(omp_trace, int(loc)) if e[0] == EventType.OMP_COLLEXIT}
        forks = {e[2] for e in events(omp_trace, 0) if e[0] == EventType.OMP_FORK}
        assert teams == forks


def test_omp_lock_orders_count_from_one_per_lock(omp_trace):
    per_lock = {}
    for loc in omp_trace.location_ids:
        for e in events(omp_trace, int(loc)):
            if e[0] == EventType.OMP_ACQUIRE_LOCK:
                per_lock.setdefault(e[2], []).append(e[5])
    kinds = {omp_trace.defs.locks[k].kind for k in per_lock}
    assert kinds == {LockKind.OMP_CRITICAL, LockKind.OMP_LOCK}
    for orders in per_lock.values():
        assert sorted(orders) == [1, 2, 3]
    # hand-over: acquisition order follows time
    for lock, _ in per_lock.items():
        acq = sorted((e[7], e[5]) for loc in omp_trace.location_ids for e in events(omp_trace, int(loc))
                     if e[0] == EventType.OMP_ACQUIRE_LOCK and e[2] == lock)
        assert [o for _, o in acq] == [1, 2, 3]


def test_omp_worker_end_barrier_is_not_stretched_over_serial_code(omp_trace):
    """libomp reports a worker's end-of-parallel barrier only at the next region: it must be clamped."""
    master_join = [e[7] for e in events(omp_trace, 0) if e[0] == EventType.OMP_JOIN][0]
    for loc in (1, 2):
        ev = events(omp_trace, loc)
        first_parallel_exit = next(e for e in ev if e[0] == EventType.EXIT and e[1].startswith("!$omp parallel"))
        assert first_parallel_exit[7] <= master_join + 1e-6  # not 20 ms later


def test_gcc_openmp_program_runs_on_libomp(runtime_built, tmp_path):
    run(["gcc", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp_gcc"], cwd=tmp_path)
    run([str(EXPERT_RUN), "-o", "g.elg", "./omp_gcc"], cwd=tmp_path)
    trace = tracefmt.open(str(tmp_path / "g.elg"))
    assert_valid(trace)
    assert len(trace.location_ids) == 3
    forks = [e for e in events(trace, 0) if e[0] == EventType.OMP_FORK]
    assert [f[4] for f in forks] == [3, 3]


# ---------------------------------------------------------------- user code
def test_instrumented_functions_filter_and_user_region(runtime_built, tmp_path):
    run(["gcc", "-O0", "-g", "-finstrument-functions", f"-I{RUNTIME / 'include'}",
         str(SAMPLES / "user_functions.c"), "-o", "uf"], cwd=tmp_path)
    (tmp_path / "filter.txt").write_text("# no helpers\nskipped_*\n")
    run([str(EXPERT_RUN), "-o", "uf.elg", "./uf"], cwd=tmp_path, env={"EXPERT_FILTER": str(tmp_path / "filter.txt")})
    trace = tracefmt.open(str(tmp_path / "uf.elg"))
    assert_valid(trace)
    names = Counter(e[1] for e in events(trace, 0) if e[0] == EventType.ENTER)
    assert names["fib"] == 15  # fib(5) makes 15 calls
    assert names["main"] == 1
    assert names["phase one"] == 1
    assert "skipped_helper" not in names
    regions = {r.name: r for r in trace.defs.regions.values()}
    assert regions["fib"].paradigm == Paradigm.COMPILER
    assert regions["phase one"].paradigm == Paradigm.USER and regions["phase one"].role == Role.USER_REGION
    ev = [e for e in events(trace, 0) if e[0] == EventType.ENTER]
    assert [e[1] for e in ev[:4]] == ["uf", "main", "phase one", "fib"]  # "uf": the program root region


def test_default_output_name_and_uninstrumented_run(runtime_built, tmp_path):
    run(["gcc", "-O1", f"-I{RUNTIME / 'include'}", str(SAMPLES / "user_functions.c"), "-o", "plain"], cwd=tmp_path)
    p = run(["./plain"], cwd=tmp_path)  # the weak API lets it run without the runtime
    assert p.stdout.strip() == "8"
    run([str(EXPERT_RUN), "./plain"], cwd=tmp_path)
    trace = tracefmt.open(str(tmp_path / "plain.elg"))
    # the program root region, named after the executable, and the user region
    assert Counter(e[1] for e in events(trace, 0) if e[0] == EventType.ENTER) == {"plain": 1, "phase one": 1}


# ---------------------------------------------------------------- crashes
@pytest.mark.parametrize("how", ["segv", "abort"])
def test_crash_leaves_readable_incomplete_trace(runtime_built, tmp_path, how):
    run(["gcc", "-O1", f"-I{RUNTIME / 'include'}", str(SAMPLES / "crash.c"), "-o", "crash"], cwd=tmp_path)
    p = run([str(EXPERT_RUN), "-o", "c.elg", "./crash", how], cwd=tmp_path, check=False)
    assert p.returncode != 0
    trace = tracefmt.open(str(tmp_path / "c.elg"))
    assert not trace.header.finished
    names = Counter(e[1] for e in events(trace, 0) if e[0] == EventType.ENTER)
    assert names["step"] == 5 and names["dying"] == 1
    # the open regions were closed so the trace still nests: the region the crash hit, then the program
    # root region (named after the executable)
    assert [e[1] for e in events(trace, 0) if e[0] == EventType.EXIT][-2:] == ["dying", "crash"]


# ---------------------------------------------------------------- MPI (+ OpenMP)
HYBRID_ITER = 3


def check_hybrid(trace, nranks):
    assert_valid(trace)
    locs = trace.defs.locations
    assert sorted({loc.process for loc in locs.values()}) == list(range(nranks))
    assert [(locs[i].process, locs[i].thread) for i in sorted(locs)] == [(r, t) for r in range(nranks) for t in (0, 1)]
    comms = trace.defs.comms
    world = [c for c in comms.values() if c.name == "MPI_COMM_WORLD"]
    assert len(world) == 1 and world[0].ranks == tuple(range(nranks))
    splits = sorted(c.ranks for c in comms.values() if c.name == "MPI_Comm_split")
    assert splits == sorted([tuple(r for r in range(nranks) if r % 2 == 0), tuple(r for r in range(nranks) if r % 2)])
    for rank in range(nranks):
        loc0 = next(i for i, loc in locs.items() if loc.process == rank and loc.thread == 0)
        ev = events(trace, loc0)
        sends = [e for e in ev if e[0] == EventType.MPI_SEND]
        recvs = [e for e in ev if e[0] == EventType.MPI_RECV]
        reqs = [e for e in ev if e[0] == EventType.MPI_RECV_REQUEST]
        right, left = (rank + 1) % nranks, (rank - 1) % nranks
        assert [(s[2], s[4], s[5]) for s in sends] == [(right, 10 + i, 800) for i in range(HYBRID_ITER)]
        assert [(r[2], r[4], r[5]) for r in recvs] == [(left, 10 + i, 800) for i in range(HYBRID_ITER)]
        assert [q[6] for q in reqs] == [r[6] for r in recvs] and all(q[6] > 0 for q in reqs)
        assert all(comms[s[3]].name == "MPI_COMM_WORLD" for s in sends)
        colls = [e for e in ev if e[0] == EventType.MPI_COLLEXIT]
        assert Counter(c[1] for c in colls) == {"MPI_Allreduce": 3, "MPI_Bcast": 3, "MPI_Barrier": 1, "MPI_Reduce": 1}
        for c in colls:
            if c[1] == "MPI_Bcast":  # root = global rank 1, root sends N*80 bytes, everyone receives 80
                assert c[4] == 1 and c[6] == 80 and c[5] == (nranks * 80 if rank == 1 else 0)
            if c[1] == "MPI_Allreduce":
                assert c[4] == 0xFFFFFFFF and c[5] == c[6] == nranks * 8
            if c[1] == "MPI_Reduce":  # on the split communicator, root = its first member
                half = [r for r in range(nranks) if r % 2 == rank % 2]
                assert comms[c[3]].ranks == tuple(half) and c[4] == half[0]
                assert c[5] == 4 and c[6] == (len(half) * 4 if rank == half[0] else 0)
        forks = [e for e in ev if e[0] == EventType.OMP_FORK]
        assert len(forks) == HYBRID_ITER and all(f[4] == 2 for f in forks)
        send_region = next(e[2] for e in ev if e[0] == EventType.ENTER and e[1] == "MPI_Send")
        assert trace.defs.regions[send_region].role == Role.MPI_POINT2POINT
    # MPI events only on thread 0
    for i, loc in locs.items():
        if loc.thread != 0:
            assert not [e for e in events(trace, i) if e[0] in (EventType.MPI_SEND, EventType.MPI_COLLEXIT)]


def build_and_trace_hybrid(tmp_path, mpicc, launcher, nranks):
    run([mpicc, "-fopenmp", "-g", "-O1", str(SAMPLES / "hybrid.c"), "-o", "hybrid"], cwd=tmp_path)
    run(launcher + [str(nranks), str(EXPERT_RUN), "-o", "h.elg", "./hybrid"], cwd=tmp_path, env=MPI_ENV)
    return tracefmt.open(str(tmp_path / "h.elg"))


def test_hybrid_open_mpi(runtime_built, tmp_path):
    need("mpicc.openmpi")
    trace = build_and_trace_hybrid(tmp_path, "mpicc.openmpi", ["mpirun.openmpi", "-np"], 2)
    check_hybrid(trace, 2)
    assert "Open MPI" in trace.defs.attributes.get("mpi_library", "")


def test_hybrid_mpich(runtime_built, tmp_path):
    need("mpicc.mpich")
    trace = build_and_trace_hybrid(tmp_path, "mpicc.mpich", ["mpiexec.mpich", "-n"], 3)
    check_hybrid(trace, 3)
