"""MPI one-sided communication traced by the runtime (format 2.3 RMA records), under Open MPI and MPICH.

samples/runtime/mpi_rma.c (3 ranks) makes every wrapped one-sided call; its comment says which, with
which targets and bytes.  Rank 0 enters the first MPI_Win_fence 100 ms late, so ranks 1 and 2 spend
about that long in theirs (RMA synchronisation time).  The samples with designed waits
(mpi_rma_fence.c, mpi_rma_gats.c, mpi_rma_lock.c) are in test_mpi_rma_waits.py.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import analyzer
import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, MPI_TOOLS, SAMPLES, assert_valid, events, need, run, trace_mpi_sample
from tracefmt.layout import NO_ID, EventType, RmaAtomic, RmaFlag, RmaSync, RmaSyncFlag, Role
from tracefmt.validate import validate

pytestmark = pytest.mark.runtime

LATE = 0.100
PUT, GET, ATOMIC, SYNC = EventType.MPI_RMA_PUT, EventType.MPI_RMA_GET, EventType.MPI_RMA_ATOMIC, EventType.MPI_RMA_SYNC
RMA_TYPES = (PUT, GET, ATOMIC, SYNC)


@pytest.fixture(scope="module", params=sorted(MPI_TOOLS))
def traced(request, runtime_built, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"mpi_rma_{request.param}")
    path = trace_mpi_sample(d, request.param, "mpi_rma.c", 3)
    trace = tracefmt.open(str(path))
    assert_valid(trace)
    return trace, analyzer.analyze(str(path))


def rma_records(trace, loc):
    """(the MPI call it is in, type, flags, window, b, c, d, e) of each RMA record of a location."""
    ev = trace.events(loc)
    names = {rid: r.name for rid, r in trace.defs.regions.items()}
    stack, out = [], []
    for i in range(len(ev)):
        t = int(ev.type[i])
        if t == EventType.ENTER:
            stack.append(names[int(ev.a[i])])
        elif t in (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT):
            stack.pop()
        elif t in RMA_TYPES:
            out.append((stack[-1], EventType(t), int(ev.flags[i]), int(ev.a[i]), int(ev.b[i]), int(ev.c[i]),
                        int(ev.d[i]), int(ev.e[i])))
    return out


def test_every_one_sided_call_recorded_with_its_role(traced):
    trace, _ = traced
    for loc, info in trace.defs.locations.items():
        calls = Counter(e[1] for e in events(trace, loc) if e[0] == EventType.ENTER and e[1].startswith("MPI_Win")
                        or e[0] == EventType.ENTER and e[1] in ("MPI_Put", "MPI_Get", "MPI_Accumulate"))
        want = {"MPI_Win_create": 1, "MPI_Win_fence": 2, "MPI_Win_free": 2, "MPI_Win_allocate": 1}
        if info.process == 0:
            want.update({"MPI_Win_post": 1, "MPI_Win_test": calls["MPI_Win_test"]})
            assert calls["MPI_Win_test"] >= 1
        else:
            want.update({"MPI_Put": 2, "MPI_Win_lock": 2, "MPI_Get": 1, "MPI_Win_flush": 1, "MPI_Win_unlock": 2,
                         "MPI_Accumulate": 1, "MPI_Win_lock_all": 1, "MPI_Win_flush_local": 1,
                         "MPI_Win_flush_local_all": 1, "MPI_Win_flush_all": 1, "MPI_Win_sync": 1,
                         "MPI_Win_unlock_all": 1, "MPI_Win_start": 1, "MPI_Win_complete": 1,
                         "MPI_Win_create": 2, "MPI_Win_fence": 4, "MPI_Win_free": 3})
            if info.process == 2:
                want["MPI_Put"] = 3
        assert calls == want, (info, calls)
    rma = {"MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Compare_and_swap",
           "MPI_Rput", "MPI_Rget"}
    roles = {r.name: r.role for r in trace.defs.regions.values() if r.name.startswith("MPI_Win") or r.name in rma}
    assert len(roles) >= 20 and set(roles.values()) == {Role.MPI_RMA}


def test_windows_defined_once_over_their_communicators(traced):
    trace, _ = traced
    d = trace.defs
    assert len(d.windows) == 3
    comms = [d.comms[w.comm].ranks for _, w in sorted(d.windows.items())]
    assert comms == [(0, 1, 2), (0, 1, 2), (1, 2)]


def test_records_per_rank(traced):
    """Every record of every rank: windows by creation order, targets as global ranks, bytes, groups."""
    trace, _ = traced
    d = trace.defs
    w0, w1, w2 = sorted(d.windows)
    for loc, info in d.locations.items():
        rank = info.process
        got = rma_records(trace, loc)
        for call, t, flags, win, b, c, dd, e in got:  # groups by their members (several ids may name the same)
            if t == SYNC and c in (RmaSync.POST, RmaSync.START, RmaSync.COMPLETE, RmaSync.WAIT, RmaSync.TEST):
                assert b in d.groups, (call, b)
        norm = [(call, t, flags, win, d.groups[b] if t == SYNC and RmaSync.POST <= c <= RmaSync.TEST else b, c, dd, e)
                for call, t, flags, win, b, c, dd, e in got]

        def sync(call, win, kind, b=NO_ID, flags=0):
            return (call, SYNC, flags, win, b, kind, 0, 0)

        want = [sync("MPI_Win_create", w0, RmaSync.CREATE), sync("MPI_Win_fence", w0, RmaSync.FENCE)]
        if rank > 0:
            want.append(("MPI_Put", PUT, 0, w0, 0, 0, 4, 0))
        want.append(sync("MPI_Win_fence", w0, RmaSync.FENCE))
        if rank > 0:
            want += [sync("MPI_Win_lock", w0, RmaSync.LOCK, 0), ("MPI_Get", GET, 0, w0, 0, 0, 4, 0),
                     sync("MPI_Win_flush", w0, RmaSync.FLUSH, 0), sync("MPI_Win_unlock", w0, RmaSync.UNLOCK, 0),
                     sync("MPI_Win_lock", w0, RmaSync.LOCK, 0, RmaSyncFlag.EXCLUSIVE),
                     ("MPI_Accumulate", ATOMIC, 0, w0, 0, RmaAtomic.ACCUMULATE, 4, 0),
                     sync("MPI_Win_unlock", w0, RmaSync.UNLOCK, 0)]
        want += [sync("MPI_Win_free", w0, RmaSync.FREE), sync("MPI_Win_allocate", w1, RmaSync.CREATE)]
        nb, local = RmaFlag.NONBLOCKING, RmaSyncFlag.LOCAL
        if rank > 0:
            want += [sync("MPI_Win_lock_all", w1, RmaSync.LOCK_ALL),
                     ("MPI_Rput", PUT, nb, w1, 0, 0, 16, 0), ("MPI_Rget", GET, nb, w1, 0, 0, 24, 0),
                     sync("MPI_Win_flush_local", w1, RmaSync.FLUSH, 0, local),
                     ("MPI_Get_accumulate", ATOMIC, 0, w1, 0, RmaAtomic.GET_ACCUMULATE, 32, 32),
                     ("MPI_Fetch_and_op", ATOMIC, 0, w1, 0, RmaAtomic.FETCH_AND_OP, 8, 8),
                     ("MPI_Compare_and_swap", ATOMIC, 0, w1, 0, RmaAtomic.COMPARE_AND_SWAP, 8, 4),
                     sync("MPI_Win_flush_local_all", w1, RmaSync.FLUSH, NO_ID, local),
                     sync("MPI_Win_flush_all", w1, RmaSync.FLUSH), sync("MPI_Win_sync", w1, RmaSync.SYNC),
                     sync("MPI_Win_unlock_all", w1, RmaSync.UNLOCK_ALL),
                     sync("MPI_Win_start", w1, RmaSync.START, (0,)), ("MPI_Put", PUT, 0, w1, 0, 0, 4, 0),
                     sync("MPI_Win_complete", w1, RmaSync.COMPLETE, (0,))]
        else:  # one MPI_RMA_SYNC for the test that returned true, none for the others
            want += [sync("MPI_Win_post", w1, RmaSync.POST, (1, 2)), sync("MPI_Win_test", w1, RmaSync.TEST, (1, 2))]
        want.append(sync("MPI_Win_free", w1, RmaSync.FREE))
        if rank > 0:
            want += [sync("MPI_Win_create", w2, RmaSync.CREATE), sync("MPI_Win_fence", w2, RmaSync.FENCE)]
            if rank == 2:  # window rank 0 of the communicator of ranks 1 and 2 is global rank 1
                want.append(("MPI_Put", PUT, 0, w2, 1, 0, 4, 0))
            want += [sync("MPI_Win_fence", w2, RmaSync.FENCE), sync("MPI_Win_free", w2, RmaSync.FREE)]
        assert norm == want, rank


def test_late_epoch_is_rma_synchronisation_time(traced):
    _, cube = traced
    sync = np.asarray(cube.values["mpi_synchronization"])
    fence = cube.find_cnodes(f"{cube.callpaths[0]}/MPI_Win_fence")
    for loc, L in enumerate(cube.locations):
        t = float(sync[fence, loc].sum())
        if L.rank == 0:
            assert t < LATE / 2
        else:
            assert t >= 0.8 * LATE, (L.rank, t)
    comm = np.asarray(cube.values["mpi_communication"])
    put = cube.find_cnodes(f"{cube.callpaths[0]}/MPI_Put")
    assert float(comm[put].sum()) > 0 and float(sync[put].sum()) == 0


@pytest.mark.parametrize("mpi", sorted(MPI_TOOLS))
def test_fortran_calls_recorded(mpi, runtime_built, tmp_path):
    """samples/runtime/mpi_rma.f90 (2 ranks): Open MPI's Fortran bindings go through our Fortran wrappers."""
    trace = tracefmt.open(str(trace_mpi_sample(tmp_path, mpi, "mpi_rma.f90", 2, compiler="fc")))
    assert_valid(trace)
    (w,) = trace.defs.windows
    common = [("MPI_Win_create", SYNC, 0, w, NO_ID, RmaSync.CREATE, 0, 0),
              ("MPI_Win_fence", SYNC, 0, w, NO_ID, RmaSync.FENCE, 0, 0)]
    want = {0: common + [common[1], ("MPI_Win_free", SYNC, 0, w, NO_ID, RmaSync.FREE, 0, 0)],
            1: common + [("MPI_Put", PUT, 0, w, 0, 0, 4, 0), common[1],
                         ("MPI_Win_lock", SYNC, RmaSyncFlag.EXCLUSIVE, w, 0, RmaSync.LOCK, 0, 0),
                         ("MPI_Accumulate", ATOMIC, 0, w, 0, RmaAtomic.ACCUMULATE, 4, 0),
                         ("MPI_Win_unlock", SYNC, 0, w, 0, RmaSync.UNLOCK, 0, 0),
                         ("MPI_Win_free", SYNC, 0, w, NO_ID, RmaSync.FREE, 0, 0)]}
    for loc, info in trace.defs.locations.items():
        assert rma_records(trace, loc) == want[info.process], info


@pytest.mark.parametrize("mpi", sorted(MPI_TOOLS))
def test_spool_of_a_killed_rank_keeps_windows_and_groups(mpi, runtime_built, tmp_path):
    """samples/runtime/mpi_rma_crash.c: rank 1 is killed after STEPS epochs; the per-process traces (rank 1's
    spool file, in its local ids) merge into one trace whose RMA records name one window and the right
    groups.  (Open MPI's SIGTERM lets rank 0 write its whole trace; MPICH kills it too, so both are spools.)"""
    from tracefmt.cli import main as expert_trace

    tools = MPI_TOOLS[mpi]
    need(tools["cc"])
    run([tools["cc"], "-g", str(SAMPLES / "mpi_rma_crash.c"), "-o", "crash"], cwd=tmp_path)
    env = dict(MPI_ENV, EXPERT_BUFFER_SIZE="64k", OMPI_MCA_odls_base_sigkill_timeout="1")
    p = run(tools["run"] + ["2", str(EXPERT_RUN), "-o", "c.elg", "./crash", "600"], cwd=tmp_path, env=env,
            check=False)
    assert p.returncode != 0
    assert expert_trace(["merge", str(tmp_path / "c.elg")]) == 0
    trace = tracefmt.open(str(tmp_path / "c.elg"))
    (w,) = trace.defs.windows
    assert trace.defs.comms[trace.defs.windows[w].comm].ranks == (0, 1)
    groups = {RmaSync.POST: (1,), RmaSync.WAIT: (1,), RmaSync.START: (0,), RmaSync.COMPLETE: (0,)}
    for loc, info in trace.defs.locations.items():
        recs = rma_records(trace, loc)
        assert len(recs) > 1000, info  # (each rank's 64 KiB buffers hold 1638 records; 600 steps make 7800)
        for call, t, flags, win, b, c, d, e in recs:
            assert win == w
            if t == SYNC and c in groups:
                assert trace.defs.groups[b] == groups[RmaSync(c)], call
            elif t == PUT:
                assert b == 1 - info.process or call == "MPI_Put" and b == 0, call
    # what validation finds is the cut itself, once each: the unfinished file, rank 1's last epoch left open
    # (and rank 0's, where its buffer ended), the fence and the epochs rank 1 never reached
    cut = ("did not finish", "is never completed", "never ends", "makes none", "exposure epoch(s) to it")
    problems = [str(p) for p in validate(trace)]
    assert len(problems) <= len(cut) and all(any(c in p for c in cut) for p in problems), problems


@pytest.mark.parametrize("mpi", sorted(MPI_TOOLS))
def test_shared_and_dynamic_windows(mpi, runtime_built, tmp_path):
    """samples/runtime/mpi_rma_shared.c (2 ranks on one node): a shared window over the node's communicator,
    a dynamic one over MPI_COMM_WORLD; attach and detach are calls without records."""
    trace = tracefmt.open(str(trace_mpi_sample(tmp_path, mpi, "mpi_rma_shared.c", 2)))
    assert_valid(trace)
    d = trace.defs
    shared, dynamic = sorted(d.windows)
    assert d.comms[d.windows[shared].comm].ranks == d.comms[d.windows[dynamic].comm].ranks == (0, 1)
    assert d.comms[d.windows[dynamic].comm].name == "MPI_COMM_WORLD"
    assert d.comms[d.windows[shared].comm].name == "MPI_Comm_split_type"
    for loc in trace.location_ids.tolist():
        assert [(r[0], r[3], r[5]) for r in rma_records(trace, loc)] == [
            ("MPI_Win_allocate_shared", shared, RmaSync.CREATE), ("MPI_Win_fence", shared, RmaSync.FENCE),
            ("MPI_Win_fence", shared, RmaSync.FENCE), ("MPI_Win_free", shared, RmaSync.FREE),
            ("MPI_Win_create_dynamic", dynamic, RmaSync.CREATE), ("MPI_Win_free", dynamic, RmaSync.FREE)]
        calls = [e[1] for e in events(trace, loc) if e[0] == EventType.ENTER]
        assert "MPI_Win_attach" in calls and "MPI_Win_detach" in calls
