"""The replay on hand-built traces: call tree, visits and times, tables, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.replay import ReplayError, replay
from tracefmt.layout import EventType, LockKind, RecvFlag


def _path(ctx, c):
    return ctx.calltree.path(c, ctx.region_name)


def _node(ctx, path):
    hits = [c for c in range(len(ctx.calltree)) if _path(ctx, c) == path]
    assert len(hits) == 1, (path, [_path(ctx, c) for c in range(len(ctx.calltree))])
    return hits[0]


def test_calltree_first_visit_order_and_times():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    # rank 0: main{ a{ c } b }, rank 1: main{ b{ c } } with b first visited on rank 1 (t=0.5 < 3)
    b.enter(r0, 0.0, "main"); b.enter(r0, 1.0, "a"); b.enter(r0, 1.5, "c"); b.exit(r0, 1.75, "c")
    b.exit(r0, 2.0, "a"); b.enter(r0, 3.0, "b"); b.exit(r0, 4.0, "b"); b.exit(r0, 10.0, "main")
    b.enter(r1, 0.0, "main"); b.enter(r1, 0.5, "b"); b.enter(r1, 0.6, "c"); b.exit(r1, 0.9, "c")
    b.exit(r1, 1.0, "b"); b.enter(r1, 2.0, "b"); b.exit(r1, 2.5, "b"); b.exit(r1, 8.0, "main")
    ctx = replay(b.build())
    paths = [_path(ctx, c) for c in range(len(ctx.calltree))]
    assert paths == ["main", "main/b", "main/b/c", "main/a", "main/a/c"]
    assert ctx.calltree.parent.tolist() == [-1, 0, 1, 0, 3]
    assert not ctx.synthetic_root
    assert ctx.visits[:, 0].tolist() == [1, 1, 0, 1, 1]
    assert ctx.visits[:, 1].tolist() == [1, 2, 1, 0, 0]
    np.testing.assert_allclose(ctx.incl_time[:, 0], [10.0, 1.0, 0.0, 1.0, 0.25])
    np.testing.assert_allclose(ctx.excl_time[:, 0], [8.0, 1.0, 0.0, 0.75, 0.25])
    np.testing.assert_allclose(ctx.incl_time[:, 1], [8.0, 1.0, 0.3, 0.0, 0.0])
    np.testing.assert_allclose(ctx.excl_time[:, 1], [7.0, 0.7, 0.3, 0.0, 0.0])


def test_several_roots_get_a_synthetic_root():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "main"); b.exit(r0, 1.0, "main")
    b.enter(r1, 0.5, "helper"); b.exit(r1, 1.0, "helper")
    ctx = replay(b.build())
    assert ctx.synthetic_root
    assert ctx.calltree.parent.tolist() == [-1, 0, 0]
    assert ctx.region_name[ctx.calltree.region[0]] == "<program>"
    assert [_path(ctx, c) for c in (1, 2)] == ["<program>/main", "<program>/helper"]
    assert ctx.excl_time[0].tolist() == [0.0, 0.0]


def test_workers_continue_the_master_call_path_and_omp_tables():
    b = tracefmt.TraceBuilder()
    m, w1, w2 = (b.location(rank=0, thread=t) for t in range(3))
    b.enter(m, 0.0, "main"); b.enter(m, 0.5, "foo")
    b.fork(m, 1.0, 7, 3)
    for k, loc in enumerate((m, w1, w2)):
        b.enter(loc, 1.1 + 0.1 * k, "!$omp parallel @a.c:1", team=7, thread_num=k)
        b.enter(loc, 1.5, "work"); b.exit(loc, 2.0 + k, "work")
        b.barrier(loc, 2.0 + k, 4.5, implicit=True)
        b.exit(loc, 4.6 + 0.1 * k, "!$omp parallel @a.c:1")
    b.join(m, 5.0, 7, 3)
    b.exit(m, 6.0, "foo"); b.exit(m, 7.0, "main")
    ctx = replay(b.build())
    par = _node(ctx, "main/foo/!$omp parallel @a.c:1")
    work = _node(ctx, "main/foo/!$omp parallel @a.c:1/work")
    assert ctx.visits[par].tolist() == [1, 1, 1]
    assert ctx.visits[work].tolist() == [1, 1, 1]
    # the worker's parallel region is not subtracted from the master's foo
    foo = _node(ctx, "main/foo")
    assert ctx.excl_time[foo].tolist() == pytest.approx([5.5 - 3.5, 0.0, 0.0])
    teams = ctx.tables["omp_teams"]
    assert len(teams) == 1
    assert (teams["team_id"][0], teams["master_loc"][0], teams["size"][0]) == (7, m, 3)
    assert (teams["fork_time"][0], teams["join_time"][0]) == (1.0, 5.0)
    assert teams["parallel_cnode"][0] == par and teams["parent_team"][0] == -1
    assert teams["fork_cnode"][0] == foo
    mem = ctx.tables["omp_team_members"]
    assert mem["loc"].tolist() == [m, w1, w2] and mem["thread_num"].tolist() == [0, 1, 2]
    assert mem["enter"].tolist() == pytest.approx([1.1, 1.2, 1.3])
    bar = ctx.tables["omp_barriers"]
    assert len(bar) == 3 and len(set(bar["instance"].tolist())) == 1
    assert bar["implicit"].all() and bar["n_members"].tolist() == [3, 3, 3]
    assert bar["enter"].tolist() == [2.0, 3.0, 4.0]


def test_nested_teams_of_different_sizes_and_a_worker_walked_before_its_master():
    # process 0: thread 0 forks team 1 (threads 0, 2); thread 2 then forks nested team 2 (threads 2, 1).
    # Thread 1 (location walked before thread 2) is a worker of the nested team: it must be deferred.
    b = tracefmt.TraceBuilder()
    t0, t1, t2 = (b.location(rank=0, thread=t) for t in range(3))
    P, Q = "!$omp parallel @outer.c:1", "!$omp parallel @inner.c:9"
    b.enter(t0, 0.0, "main")
    b.fork(t0, 1.0, 1, 2)
    b.enter(t0, 1.1, P, team=1, thread_num=0)
    b.enter(t2, 1.2, P, team=1, thread_num=1)
    b.enter(t2, 1.3, "nested")
    b.fork(t2, 1.4, 2, 2)
    b.enter(t2, 1.5, Q, team=2, thread_num=0)
    b.enter(t1, 1.6, Q, team=2, thread_num=1)
    for loc, e in ((t2, 2.0), (t1, 2.5)):
        b.barrier(loc, e, 3.0, team=2)
    b.exit(t1, 3.1, Q); b.exit(t2, 3.1, Q)
    b.join(t2, 3.2, 2, 2)
    b.exit(t2, 3.3, "nested")
    for loc, e in ((t0, 1.5), (t2, 3.4)):
        b.barrier(loc, e, 3.5, team=1)
    b.barrier(t0, 3.6, 3.8, team=1); b.barrier(t2, 3.7, 3.8, team=1)
    b.exit(t0, 3.9, P); b.exit(t2, 3.9, P)
    b.join(t0, 4.0, 1, 2)
    b.exit(t0, 5.0, "main")
    ctx = replay(b.build())
    inner = _node(ctx, f"main/{P}/nested/{Q}")
    assert ctx.visits[inner].tolist() == [0, 1, 1]
    teams = ctx.tables["omp_teams"]
    assert teams["team_id"].tolist() == [1, 2]
    assert teams["parent_team"].tolist() == [-1, 0]
    assert teams["master_loc"].tolist() == [t0, t2]
    bar = ctx.tables["omp_barriers"]
    # team 2: one instance with threads 1, 2; team 1: two instances with threads 0, 2
    inst = {}
    for i in range(len(bar)):
        inst.setdefault((int(bar["team"][i]), int(bar["seq"][i])), []).append(int(bar["loc"][i]))
    assert inst == {(1, 0): [t1, t2], (0, 0): [t0, t2], (0, 1): [t0, t2]}
    assert sorted(set(bar["n_members"].tolist())) == [2]


def test_messages_fifo_wildcards_nonblocking_and_cancel():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "main"); b.enter(r1, 0.0, "main")
    # two messages with the same (source, tag): FIFO; the second is received by a wildcard receive
    b.enter(r0, 1.0, "MPI_Send"); b.send(r0, 1.0, dest=1, tag=5, nbytes=10); b.exit(r0, 1.1)
    b.enter(r0, 1.2, "MPI_Send"); b.send(r0, 1.2, dest=1, tag=5, nbytes=20); b.exit(r0, 1.3)
    # a cancelled non-blocking send never matches anything
    b.enter(r0, 1.4, "MPI_Isend"); b.send(r0, 1.4, dest=1, tag=5, nbytes=99, request=3); b.exit(r0, 1.45)
    b.enter(r0, 1.5, "MPI_Cancel"); b.cancel(r0, 1.5, 3); b.exit(r0, 1.55)
    # a non-blocking send completed in MPI_Wait
    b.enter(r0, 2.0, "MPI_Isend"); b.send(r0, 2.0, dest=1, tag=6, nbytes=30, request=4); b.exit(r0, 2.1)
    b.enter(r0, 2.5, "MPI_Wait"); b.send_complete(r0, 2.6, 4); b.exit(r0, 2.7)
    b.exit(r0, 9.0)
    # receiver: Irecv (tag 6) then Irecv (tag 5, any source) posted, then the blocking receive of the
    # first tag-5 message, then a Waitall completing both requests in reverse order
    b.enter(r1, 0.5, "MPI_Irecv"); b.recv_request(r1, 0.55, 11, source=0, tag=6); b.exit(r1, 0.6)
    b.enter(r1, 3.0, "MPI_Recv"); b.recv(r1, 3.1, source=0, tag=5, nbytes=10); b.exit(r1, 3.2)
    b.enter(r1, 3.5, "MPI_Irecv"); b.recv_request(r1, 3.55, 12, source=None, tag=5); b.exit(r1, 3.6)
    b.enter(r1, 4.0, "MPI_Waitall")
    b.recv(r1, 4.5, source=0, tag=5, nbytes=20, request=12, flags=RecvFlag.ANY_SOURCE)
    b.recv(r1, 4.5, source=0, tag=6, nbytes=30, request=11)
    b.exit(r1, 4.6)
    b.exit(r1, 9.0)
    ctx = replay(b.build())
    M = ctx.tables["messages"]
    assert len(M) == 3
    assert ctx.problems == []
    by_bytes = {int(M["bytes"][i]): i for i in range(3)}
    assert sorted(by_bytes) == [10, 20, 30]
    i10, i20, i30 = by_bytes[10], by_bytes[20], by_bytes[30]
    assert (M["recv_enter"][i10], M["recvp_enter"][i10]) == (3.0, 3.0)
    assert M["recv_request"][i10] == 0 and M["send_enter"][i10] == 1.0
    assert (M["recv_enter"][i20], M["recvp_enter"][i20], M["send_enter"][i20]) == (4.0, 3.5, 1.2)
    assert M["recv_flags"][i20] == RecvFlag.ANY_SOURCE
    assert (M["recvp_enter"][i30], M["recv_enter"][i30]) == (0.5, 4.0)
    assert (M["send_enter"][i30], M["sendc_enter"][i30], M["sendc_exit"][i30]) == (2.0, 2.5, 2.7)
    assert ctx.region_name[M["sendc_region"][i30]] == "MPI_Wait"
    assert ctx.region_name[M["recvp_region"][i30]] == "MPI_Irecv"
    assert M["recv_call"][i20] == M["recv_call"][i30] != M["recv_call"][i10]
    assert M["recv_seq"].tolist() == [0, 1, 2]


def test_collectives_per_communicator_and_incomplete_instances():
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(3)]
    even = b.comm([0, 2], name="even")
    for r, loc in enumerate(locs):
        b.enter(loc, 0.0, "main")
    # world barrier, then an Allreduce on the even comm, then a world Bcast that rank 1 never reaches
    for r, loc in enumerate(locs):
        b.collective(loc, 1.0 + r, 4.0, "MPI_Barrier")
    for r in (0, 2):
        b.collective(locs[r], 5.0 + r, 8.0, "MPI_Allreduce", comm=even, sent=8, recvd=8)
    for r in (0, 2):
        b.collective(locs[r], 9.0, 9.5, "MPI_Bcast", root=0, sent=8 if r == 0 else 0, recvd=8)
    for loc in locs:
        b.exit(loc, 10.0)
    ctx = replay(b.build())
    C = ctx.tables["collectives"]
    inst = {}
    for i in range(len(C)):
        inst.setdefault(int(C["instance"][i]), []).append(
            (ctx.region_name[C["region"][i]], int(C["rank"][i]), int(C["n_members"][i]), bool(C["complete"][i])))
    groups = sorted(inst.values())
    assert groups == sorted([
        [("MPI_Barrier", 0, 3, True), ("MPI_Barrier", 1, 3, True), ("MPI_Barrier", 2, 3, True)],
        [("MPI_Allreduce", 0, 2, True), ("MPI_Allreduce", 2, 2, True)],
        [("MPI_Bcast", 0, 3, False), ("MPI_Bcast", 2, 3, False)],
    ])
    assert any("miss members" in p for p in ctx.problems)
    root = C["root"][[ctx.region_name[r] == "MPI_Bcast" for r in C["region"]]]
    assert root.tolist() == [0, 0]


def test_locks_hand_over_order():
    b = tracefmt.TraceBuilder()
    t0, t1 = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    crit = b.lock("crit", LockKind.OMP_CRITICAL)
    b.enter(t0, 0.0, "main")
    b.fork(t0, 0.1, 1, 2)
    b.enter(t0, 0.2, "!$omp parallel", team=1); b.enter(t1, 0.2, "!$omp parallel", team=1)
    # thread 1 gets the lock first (order 1), thread 0 waits from 1.0 to 2.0 (order 2)
    b.enter(t1, 0.5, "!$omp critical"); b.acquire(t1, 0.6, crit, order=1)
    b.release(t1, 2.0, crit, order=1); b.exit(t1, 2.1)
    b.enter(t0, 1.0, "!$omp critical"); b.acquire(t0, 2.0, crit, order=2)
    b.release(t0, 2.5, crit, order=2); b.exit(t0, 2.6)
    b.exit(t0, 3.0); b.exit(t1, 3.0)
    b.join(t0, 3.1, 1, 2)
    b.exit(t0, 4.0)
    L = replay(b.build()).tables["locks"]
    assert L["order"].tolist() == [1, 2]
    assert L["loc"].tolist() == [t1, t0]
    assert L["acquire_time"].tolist() == [0.6, 2.0]
    assert L["release_time"].tolist() == [2.0, 2.5]
    assert np.isnan(L["prev_release_time"][0]) and L["prev_release_time"][1] == 2.0
    assert L["call_enter"].tolist() == [0.5, 1.0]
    assert L["lock_kind"].tolist() == [LockKind.OMP_CRITICAL] * 2


def test_unbalanced_exit_is_a_clear_error():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.enter(r0, 0.0, "main")
    b.region("other")
    b.event(r0, 1.0, EventType.EXIT, a=b.region("other"))
    with pytest.raises(ReplayError) as e:
        replay(b.build())
    msg = str(e.value)
    assert "location 0" in msg and "event 1" in msg and "other" in msg


def test_truncated_location_is_closed_and_reported():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.enter(r0, 0.0, "main"); b.enter(r0, 1.0, "foo"); b.enter(r0, 2.0, "bar"); b.exit(r0, 3.0, "bar")
    b.event(r0, 4.0, EventType.COUNTER)  # last event; foo and main stay open
    ctx = replay(b.build())
    assert any("2 region(s) still open" in p for p in ctx.problems)
    assert ctx.incl_time[:, 0].tolist() == [4.0, 3.0, 1.0]


def test_worker_of_an_unknown_team_is_an_error():
    b = tracefmt.TraceBuilder()
    t0, t1 = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    b.enter(t0, 0.0, "main"); b.exit(t0, 1.0)
    b.enter(t1, 0.0, "!$omp parallel", team=42, thread_num=1); b.exit(t1, 1.0)
    with pytest.raises(ReplayError, match="no thread of its process forked"):
        replay(b.build())
