"""Format 2.3: MPI one-sided communication (WINDOW definitions, MPI_RMA_* events) through TraceBuilder, the
reader, the validator, the dense renumbering and the merge of per-process pieces."""
from __future__ import annotations

import pytest

import tracefmt
from tracefmt import layout
from tracefmt.builder import BuilderError
from tracefmt.dense import dense_view
from tracefmt.layout import NO_ID, EventType, RmaAtomic, RmaFlag, RmaSync, RmaSyncFlag
from tracefmt.merge import merge, per_process_files
from tracefmt.validate import validate

E = EventType


def gats(b, ranks=(0, 1), target=0, origin=1):
    """main on every rank, a window over the world, created; rank `target` exposes, `origin` puts, gets and
    accumulates, then both free the window."""
    locs = [b.location(rank=r) for r in ranks]
    w = b.window(name="halo")
    for loc in locs:
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 0.1, 0.2, "MPI_Win_create", w, RmaSync.CREATE)
    t, o = locs[ranks.index(target)], locs[ranks.index(origin)]
    b.rma_call(t, 0.3, 0.4, "MPI_Win_post", w, RmaSync.POST, group=[origin])
    b.rma_call(o, 0.3, 0.5, "MPI_Win_start", w, RmaSync.START, group=[target])
    b.enter(o, 0.6, "MPI_Put")
    b.rma_put(o, 0.6, w, target, 64)
    b.exit(o, 0.7)
    b.enter(o, 0.7, "MPI_Rget")
    b.rma_get(o, 0.7, w, target, 16, flags=RmaFlag.NONBLOCKING)
    b.exit(o, 0.75)
    b.enter(o, 0.75, "MPI_Compare_and_swap")
    b.rma_atomic(o, 0.75, w, target, RmaAtomic.COMPARE_AND_SWAP, sent=16, recvd=8)
    b.exit(o, 0.8)
    b.rma_call(o, 0.8, 0.9, "MPI_Win_complete", w, RmaSync.COMPLETE, group=[target])
    b.rma_call(t, 0.5, 0.9, "MPI_Win_wait", w, RmaSync.WAIT, group=[origin])
    b.rma_call(o, 1.0, 1.1, "MPI_Win_lock", w, RmaSync.LOCK, target=target, flags=RmaSyncFlag.EXCLUSIVE)
    b.rma_call(o, 1.1, 1.2, "MPI_Win_flush_local", w, RmaSync.FLUSH, target=target, flags=RmaSyncFlag.LOCAL)
    b.rma_call(o, 1.2, 1.3, "MPI_Win_unlock", w, RmaSync.UNLOCK, target=target)
    for loc in locs:
        b.rma_call(loc, 1.4, 1.5, "MPI_Win_free", w, RmaSync.FREE)
        b.exit(loc, 2.0, "main")
    return locs, w


def test_round_trip_of_windows_and_rma_events():
    b = tracefmt.TraceBuilder()
    (t, o), w = gats(b)
    tr = b.build()
    assert tr.header.version == (2, 3) and layout.VERSION_MINOR == 3
    assert tr.defs.windows == {w: tracefmt.Window(w, tr.defs.comms[b.world()].id, "halo")}
    ev = tr.events(o)
    rma = ev.type >= E.MPI_RMA_PUT
    got = [(E(int(x)), int(a), int(bb), int(c), int(d), int(e), int(f))
           for x, a, bb, c, d, e, f in zip(ev.type[rma], ev.a[rma], ev.b[rma], ev.c[rma], ev.d[rma], ev.e[rma],
                                           ev.flags[rma])]
    g0 = b.group([0])
    assert got == [
        (E.MPI_RMA_SYNC, w, NO_ID, RmaSync.CREATE, 0, 0, 0),
        (E.MPI_RMA_SYNC, w, g0, RmaSync.START, 0, 0, 0),
        (E.MPI_RMA_PUT, w, 0, 0, 64, 0, 0),
        (E.MPI_RMA_GET, w, 0, 0, 16, 0, RmaFlag.NONBLOCKING),
        (E.MPI_RMA_ATOMIC, w, 0, RmaAtomic.COMPARE_AND_SWAP, 16, 8, 0),
        (E.MPI_RMA_SYNC, w, g0, RmaSync.COMPLETE, 0, 0, 0),
        (E.MPI_RMA_SYNC, w, 0, RmaSync.LOCK, 0, 0, RmaSyncFlag.EXCLUSIVE),
        (E.MPI_RMA_SYNC, w, 0, RmaSync.FLUSH, 0, 0, RmaSyncFlag.LOCAL),
        (E.MPI_RMA_SYNC, w, 0, RmaSync.UNLOCK, 0, 0, 0),
        (E.MPI_RMA_SYNC, w, NO_ID, RmaSync.FREE, 0, 0, 0),
    ]
    assert tr.defs.groups[g0] == (0,)
    assert b.group([0]) == g0  # one GROUP per distinct list
    assert validate(tr) == []


def test_builder_refuses_what_no_measurement_writes():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    with pytest.raises(BuilderError, match="unknown window"):
        b.rma_put(loc, 0.0, 3, 0, 8)
    w = b.window()
    with pytest.raises(BuilderError, match="needs the group"):
        b.rma_sync(loc, 0.0, w, RmaSync.POST)
    with pytest.raises(BuilderError, match="needs its target"):
        b.rma_sync(loc, 0.0, w, RmaSync.LOCK)
    with pytest.raises(ValueError):
        b.rma_sync(loc, 0.0, w, 99)


def broken(edit):
    """The GATS trace with one change made by ``edit(b, t, o, w)``; the validator's problems as text."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in (0, 1)]
    w = b.window()
    for loc in locs:
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 0.1, 0.2, "MPI_Win_create", w, RmaSync.CREATE)
    edit(b, locs[0], locs[1], w)
    for loc in locs:
        b.exit(loc, 5.0, "main")
    return [str(p) for p in validate(b.build())]


def test_validator_reports_rma_errors():
    def outside(b, t, o, w):
        b.rma_put(o, 1.0, w, 0, 8)
    assert any("MPI_RMA_PUT inside 'main', which is no MPI call" in p for p in broken(outside))

    def bad_target(b, t, o, w):
        b.enter(o, 1.0, "MPI_Get")
        b.rma_get(o, 1.0, w, 7, 8)
        b.exit(o, 1.1)
    assert any("target rank 7, which is not in the window's communicator" in p for p in broken(bad_target))

    def unmatched_start(b, t, o, w):
        b.rma_call(o, 1.0, 1.1, "MPI_Win_start", w, RmaSync.START, group=[0])
        b.rma_call(o, 1.2, 1.3, "MPI_Win_complete", w, RmaSync.COMPLETE, group=[0])
    assert any("rank 1 starts 1 access epoch(s) to rank 0, which posts 0" in p for p in broken(unmatched_start))

    def open_epochs(b, t, o, w):
        b.rma_call(t, 1.0, 1.1, "MPI_Win_post", w, RmaSync.POST, group=[1])
        b.rma_call(o, 1.0, 1.1, "MPI_Win_start", w, RmaSync.START, group=[0])
        b.rma_call(o, 1.2, 1.3, "MPI_Win_start", w, RmaSync.START, group=[0])
    probs = broken(open_epochs)
    assert any("while the access epoch begun at event" in p for p in probs)
    assert any("exposure epoch on window 0 posted at event" in p for p in probs)

    def unbalanced_lock(b, t, o, w):
        b.rma_call(o, 1.0, 1.1, "MPI_Win_unlock", w, RmaSync.UNLOCK, target=0)
        b.rma_call(o, 1.2, 1.3, "MPI_Win_lock", w, RmaSync.LOCK, target=0)
    probs = broken(unbalanced_lock)
    assert any("which this location does not hold" in p for p in probs)
    assert any("never released" in p for p in probs)

    def one_fence(b, t, o, w):
        b.rma_call(t, 1.0, 1.1, "MPI_Win_fence", w, RmaSync.FENCE)
    assert any("collective synchronisation 2 on window 0: rank 1 makes none, rank 0 FENCE" in p
               for p in broken(one_fence))

    def after_free(b, t, o, w):
        for loc in (t, o):
            b.rma_call(loc, 1.0, 1.1, "MPI_Win_free", w, RmaSync.FREE)
        b.rma_call(o, 1.2, 1.3, "MPI_Win_fence", w, RmaSync.FENCE)
    assert any("after its MPI_Win_free" in p for p in broken(after_free))

    def undefined(b, t, o, w):
        b.enter(o, 1.0, "MPI_Put")
        b.event(o, 1.0, E.MPI_RMA_PUT, a=9, b=0, d=8)
        b.event(o, 1.0, E.MPI_RMA_SYNC, a=w, b=0, c=77)
        b.event(o, 1.0, E.MPI_RMA_SYNC, a=w, b=55, c=RmaSync.POST)
        b.exit(o, 1.1)
    probs = broken(undefined)
    assert any("undefined window 9" in p for p in probs)
    assert any("unknown kind 77" in p for p in probs)
    assert any("names undefined group 55" in p for p in probs)


def test_a_window_used_where_it_was_never_created():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    w = b.window()
    b.enter(loc, 0.0, "main")
    b.rma_call(loc, 0.1, 0.2, "MPI_Win_fence", w, RmaSync.FENCE)
    b.exit(loc, 1.0)
    assert any("never created there" in str(p) for p in validate(b.build()))


def test_dense_view_renumbers_target_ranks_with_the_processes():
    """Ranks 10 and 5000 (far from dense): targets of transfers and locks follow the renumbering, groups too."""
    b = tracefmt.TraceBuilder()
    (t, o), w = gats(b, ranks=(10, 5000), target=10, origin=5000)
    dv = dense_view(b.build())
    assert dv is not None and type(dv).__name__ == "DenseTrace"
    ev = dv.events(1)  # the origin, rank 5000 -> 1
    rma = (ev.type == E.MPI_RMA_PUT) | (ev.type == E.MPI_RMA_GET) | (ev.type == E.MPI_RMA_ATOMIC)
    assert ev.b[rma].tolist() == [0, 0, 0]
    sync = ev.type == E.MPI_RMA_SYNC
    by_kind = dict(zip(ev.c[sync].tolist(), ev.b[sync].tolist()))
    assert by_kind[RmaSync.LOCK] == by_kind[RmaSync.UNLOCK] == by_kind[RmaSync.FLUSH] == 0
    assert dv.defs.groups[by_kind[RmaSync.START]] == (0,)
    assert by_kind[RmaSync.CREATE] == NO_ID
    assert dv.defs.windows[w].comm == b.world()


def test_merge_keeps_windows_and_post_start_groups(tmp_path):
    """Two per-process pieces (rank 0 exposes, rank 1 accesses); defined in different orders."""
    for rank in (0, 1):
        b = tracefmt.TraceBuilder()
        if rank == 1:
            b.group([1, 0])  # a group id of its own before the one the epoch uses
        loc = b.location(rank=rank)
        world = b.comm((0, 1), "MPI_COMM_WORLD")
        w = b.window(world, "w")
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 0.1, 0.2, "MPI_Win_create", w, RmaSync.CREATE)
        if rank == 0:
            b.rma_call(loc, 0.3, 0.4, "MPI_Win_post", w, RmaSync.POST, group=[1])
            b.rma_call(loc, 0.5, 0.9, "MPI_Win_wait", w, RmaSync.WAIT, group=[1])
        else:
            b.rma_call(loc, 0.3, 0.4, "MPI_Win_start", w, RmaSync.START, group=[0])
            b.enter(loc, 0.5, "MPI_Put")
            b.rma_put(loc, 0.5, w, 0, 8)
            b.exit(loc, 0.6)
            b.rma_call(loc, 0.7, 0.8, "MPI_Win_complete", w, RmaSync.COMPLETE, group=[0])
        b.rma_call(loc, 1.0, 1.1, "MPI_Win_free", w, RmaSync.FREE)
        b.exit(loc, 2.0)
        b.write(str(tmp_path / f"r.{rank}.elg"))
    merge(per_process_files(str(tmp_path / "r.elg")), str(tmp_path / "r.elg"))
    with tracefmt.open(str(tmp_path / "r.elg")) as tr:
        assert list(tr.defs.windows.values()) == [tracefmt.Window(0, 0, "w")]
        assert tr.defs.comms[0].ranks == (0, 1)
        ev = tr.events(1)
        sync = ev.type == E.MPI_RMA_SYNC
        groups = [tr.defs.groups[g] for g, c in zip(ev.b[sync].tolist(), ev.c[sync].tolist())
                  if c in (RmaSync.START, RmaSync.COMPLETE)]
        assert groups == [(0,), (0,)]
        assert validate(tr) == []


def test_merge_matches_windows_by_their_communicator_and_creation_order(tmp_path):
    """Spool files number a process's windows in creation order over all communicators: rank 1 first creates a
    window on a communicator of its own, so its id of the shared window differs from rank 0's."""
    for rank in (0, 1):
        b = tracefmt.TraceBuilder()
        loc = b.location(rank=rank)
        world = b.comm((0, 1), "MPI_COMM_WORLD")
        b.enter(loc, 0.0, "main")
        if rank == 1:
            self_comm = b.comm((1,), "MPI_COMM_SELF")
            own = b.window(self_comm, "own")
            b.rma_call(loc, 0.05, 0.06, "MPI_Win_create", own, RmaSync.CREATE)
        w = b.window(world, "w")
        assert w == rank  # the shared window's id differs between the pieces
        b.rma_call(loc, 0.1, 0.2, "MPI_Win_create", w, RmaSync.CREATE)
        b.rma_call(loc, 0.3, 0.4, "MPI_Win_fence", w, RmaSync.FENCE)
        b.exit(loc, 1.0)
        b.write(str(tmp_path / f"r.{rank}.elg"))
    merge(per_process_files(str(tmp_path / "r.elg")), str(tmp_path / "r.elg"))
    with tracefmt.open(str(tmp_path / "r.elg")) as tr:
        world_comm = next(c.id for c in tr.defs.comms.values() if c.ranks == (0, 1))
        shared = [w.id for w in tr.defs.windows.values() if w.comm == world_comm]
        assert len(shared) == 1 and len(tr.defs.windows) == 2
        for loc in (0, 1):
            ev = tr.events(loc)
            fence = (ev.type == E.MPI_RMA_SYNC) & (ev.c == RmaSync.FENCE)
            assert ev.a[fence].tolist() == shared
        assert validate(tr) == []


def test_dump_and_info_name_the_rma_fields(tmp_path, capsys):
    from tracefmt.cli import main as expert_trace

    b = tracefmt.TraceBuilder()
    gats(b)
    b.write(str(tmp_path / "rma.elg"))
    assert expert_trace(["info", str(tmp_path / "rma.elg")]) == 0
    assert ", 1 MPI windows" in capsys.readouterr().out
    assert expert_trace(["dump", str(tmp_path / "rma.elg"), "--location", "1"]) == 0
    out = capsys.readouterr().out
    for line in ("MPI_RMA_SYNC START window=0 group=2 [0]", "MPI_RMA_PUT window=0 target=0 bytes=64",
                 "MPI_RMA_GET window=0 target=0 bytes=16 flags=1",
                 "MPI_RMA_ATOMIC window=0 target=0 op=COMPARE_AND_SWAP sent=16 received=8",
                 "MPI_RMA_SYNC LOCK window=0 target=0 flags=1", "MPI_RMA_SYNC FLUSH window=0 target=0 flags=2",
                 "MPI_RMA_SYNC FREE window=0"):
        assert line in out, line
