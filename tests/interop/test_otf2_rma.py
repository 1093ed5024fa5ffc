"""MPI one-sided (RMA) records through OTF2: our export (tracefmt/otf2_out.py) and the native reader.

``rma_trace`` makes every RMA record of format 2.3 inside the MPI call that makes it (3 ranks, a window over
MPI_COMM_WORLD and one over ranks 1 and 2); ours -> OTF2 -> ours keeps every RMA record (windows and groups
compared by what they name: ids are renumbered) and every analysis result.  The hand-written archive
(``otf2_bytes.write_rma_archive``) holds what Score-P writes and our export never does (a request-lock
before an acquire, an unsuccessful try-lock, a Win_test that found the epoch open, window and group ids
through local mapping tables, allocate/deallocate collectives), in both byte orders; its rows are derived by
hand from the records.  The otf2-package reference reader does not translate RMA records (it counts them).
"""
from __future__ import annotations

import numpy as np
import pytest

import otf2_bytes
import tracefmt
from analyzer.analyze import analyze
from tracefmt import otf2_native
from tracefmt.detect import open_any
from tracefmt.layout import NO_ID, EventType as E, RmaAtomic as A, RmaFlag, RmaSync as S, RmaSyncFlag
from tracefmt.validate import validate

RMA = (E.MPI_RMA_PUT, E.MPI_RMA_GET, E.MPI_RMA_ATOMIC, E.MPI_RMA_SYNC)
EXCL, LOCAL, NB = RmaSyncFlag.EXCLUSIVE, RmaSyncFlag.LOCAL, RmaFlag.NONBLOCKING


def rma_trace():
    """3 ranks.  Rank 0 enters the first fence 0.4 s after the others; ranks 1 and 2 put into rank 0, then
    lock it (1 exclusive, 2 shared) for gets, atomics and flushes; a post/start/complete/test epoch with
    rank 0 as target; lock_all, sync and flush_local_all on rank 1; a window over ranks 1 and 2 with a put
    from 2 to its window rank 0 (global 1)."""
    b = tracefmt.TraceBuilder()
    L = [b.location(rank=r) for r in range(3)]
    world = b.world()
    sub = b.comm([1, 2], name="sub", parent=world)
    w, ws = b.window(world), b.window(sub)

    def call(loc, t0, t1, name, record=None, **kw):
        b.enter(loc, t0, name)
        if record is not None:
            record(loc, (t0 + t1) / 2, **kw)
        b.exit(loc, t1, name)

    for r, loc in enumerate(L):
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 1.0 + 0.1 * r, 1.5, "MPI_Win_create", w, S.CREATE)
        b.rma_call(loc, 2.0 if r == 0 else 1.6, 2.05, "MPI_Win_fence", w, S.FENCE)
        if r:
            call(loc, 2.1, 2.2, "MPI_Put", b.rma_put, window=w, target=0, nbytes=64)
        b.rma_call(loc, 2.3, 2.5, "MPI_Win_fence", w, S.FENCE)
    one, two = L[1], L[2]
    b.rma_call(one, 2.6, 2.7, "MPI_Win_lock", w, S.LOCK, target=0, flags=EXCL)
    call(one, 2.7, 2.8, "MPI_Get", b.rma_get, window=w, target=0, nbytes=8)
    b.rma_call(one, 2.8, 2.85, "MPI_Win_flush", w, S.FLUSH, target=0)
    call(one, 2.85, 2.9, "MPI_Accumulate", b.rma_atomic, window=w, target=0, op=A.ACCUMULATE, sent=8)
    b.rma_call(one, 2.9, 3.0, "MPI_Win_unlock", w, S.UNLOCK, target=0)
    b.rma_call(two, 2.6, 2.65, "MPI_Win_lock", w, S.LOCK, target=0)
    call(two, 2.65, 2.7, "MPI_Rget", b.rma_get, window=w, target=0, nbytes=16, flags=NB)
    call(two, 2.7, 2.75, "MPI_Get_accumulate", b.rma_atomic, window=w, target=0, op=A.GET_ACCUMULATE, sent=32,
         recvd=32)
    call(two, 2.75, 2.8, "MPI_Fetch_and_op", b.rma_atomic, window=w, target=0, op=A.FETCH_AND_OP, sent=8, recvd=8)
    call(two, 2.8, 2.85, "MPI_Compare_and_swap", b.rma_atomic, window=w, target=0, op=A.COMPARE_AND_SWAP, sent=8,
         recvd=4)
    b.rma_call(two, 2.85, 2.9, "MPI_Win_flush_local", w, S.FLUSH, target=0, flags=LOCAL)
    b.rma_call(two, 2.9, 2.95, "MPI_Win_flush_all", w, S.FLUSH)
    b.rma_call(two, 2.95, 3.0, "MPI_Win_unlock", w, S.UNLOCK, target=0)
    b.rma_call(L[0], 3.0, 3.1, "MPI_Win_post", w, S.POST, group=[1, 2])
    for loc in (one, two):
        b.rma_call(loc, 3.2, 3.3, "MPI_Win_start", w, S.START, group=[0])
        call(loc, 3.3, 3.35, "MPI_Rput", b.rma_put, window=w, target=0, nbytes=4, flags=NB)
        b.rma_call(loc, 3.4, 3.5, "MPI_Win_complete", w, S.COMPLETE, group=[0])
    b.rma_call(L[0], 3.6, 3.65, "MPI_Win_test", w, S.TEST, group=[1, 2])
    b.rma_call(one, 3.6, 3.65, "MPI_Win_lock_all", w, S.LOCK_ALL)
    b.rma_call(one, 3.65, 3.7, "MPI_Win_sync", w, S.SYNC)
    b.rma_call(one, 3.7, 3.75, "MPI_Win_flush_local_all", w, S.FLUSH, flags=LOCAL)
    b.rma_call(one, 3.75, 3.8, "MPI_Win_unlock_all", w, S.UNLOCK_ALL)
    for loc in (one, two):
        b.rma_call(loc, 3.9, 4.0, "MPI_Win_create", ws, S.CREATE)
        b.rma_call(loc, 4.0, 4.1, "MPI_Win_fence", ws, S.FENCE)
        if loc == two:
            call(loc, 4.1, 4.15, "MPI_Put", b.rma_put, window=ws, target=1, nbytes=4)
        b.rma_call(loc, 4.2, 4.3, "MPI_Win_fence", ws, S.FENCE)
        b.rma_call(loc, 4.3, 4.4, "MPI_Win_free", ws, S.FREE)
    for loc in L:
        b.rma_call(loc, 4.5, 4.6, "MPI_Win_free", w, S.FREE)
        b.exit(loc, 5.0, "main")
    return b.build()


def rma_rows(trace) -> dict:
    """{location: [(type, flags, window's communicator ranks and creation position, b, c, d, e, time)]} with
    groups as their ranks: what an RMA record says, whatever ids name its window and group."""
    d = trace.defs
    order = {}
    for wid, w in sorted(d.windows.items()):
        ranks = d.comms[w.comm].ranks
        order[wid] = (ranks, sum(1 for v in order.values() if v[0] == ranks))
    out = {}
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        rows = []
        for i in np.flatnonzero(np.isin(ev.type, RMA)).tolist():
            t, c, b = int(ev.type[i]), int(ev.c[i]), int(ev.b[i])
            if t == E.MPI_RMA_SYNC and S.POST <= c <= S.TEST:
                b = d.groups[b]
            rows.append((t, int(ev.flags[i]), order[int(ev.a[i])], b, c, int(ev.d[i]), int(ev.e[i]),
                         round(float(ev.time[i]), 9)))
        out[loc] = rows
    return out


@pytest.fixture(scope="module")
def original():
    trace = rma_trace()
    assert [str(p) for p in validate(trace)] == []
    return trace


@pytest.fixture(scope="module")
def exported(original, tmp_path_factory):
    from tracefmt import otf2_out

    out = tmp_path_factory.mktemp("rma_otf2") / "o"
    assert otf2_out.write_otf2(original, out) == []
    return out / "traces.otf2"


def test_round_trip_keeps_every_rma_record(original, exported):
    back = open_any(exported)
    assert back.problems == [] and not any("Rma" in n for n in back.notes)
    assert [str(p) for p in validate(back)] == []
    mine, theirs = rma_rows(original), rma_rows(back)
    assert mine == theirs
    assert [len(mine[loc]) for loc in sorted(mine)] == [6, 21, 21]  # as rma_trace makes them
    # windows keep their communicators (ranks) and creation order; names stay empty as written
    assert [(back.defs.comms[w.comm].ranks, w.name) for _, w in sorted(back.defs.windows.items())] == [
        ((0, 1, 2), ""), ((1, 2), "")]


def test_round_trip_keeps_analysis_results(original, exported):
    ca, cb = analyze(original), analyze(open_any(exported))
    ta = {m: float(ca.total(m)) for m in ca.metric_names}
    tb = {m: float(cb.total(m)) for m in cb.metric_names}
    assert ta.keys() == tb.keys()
    for k in ta:
        assert ta[k] == pytest.approx(tb[k], abs=1e-9), k


def test_export_written_as_scorep_does(exported):
    """The records Score-P writes around each call (SCOREP_Mpi_Rma.c), read back by the otf2 package."""
    import otf2

    with otf2.reader.open(str(exported)) as r:
        names = [type(ev).__name__ for _loc, ev in r.events]
    # create, 2 fences, free on 3 ranks + create, 2 fences, free of the sub-window on 2: a begin and an end each
    assert names.count("RmaCollectiveBegin") == names.count("RmaCollectiveEnd") == 3 * 4 + 2 * 4
    assert names.count("RmaWinCreate") == names.count("RmaWinDestroy") == 3 + 2
    assert names.count("RmaGroupSync") == 1 + 1 + 2 * 2  # post, test, start and complete on 1 and 2
    assert names.count("RmaAcquireLock") == names.count("RmaReleaseLock") == 3
    assert names.count("RmaPut") == 2 + 2 + 1 and names.count("RmaGet") == 2 and names.count("RmaAtomic") == 4
    assert names.count("RmaSync") == 5  # flush, sync, flush_local_all on 1; flush_local, flush_all on 2
    # blocking transfers complete in their call (3 puts, 1 get, 4 atomics); Rput and Rget do not say when
    assert names.count("RmaOpCompleteBlocking") == 8


# ------------------------------------------------------------------------- a hand-written Score-P-like archive
def _expected_rows():
    """(time in us, type, flags, window, b, c, d, e) per rank, from otf2_bytes.rma_events record by record:
    windows A, B are ours 0, 1 (definition order); groups as their ranks."""
    sync = E.MPI_RMA_SYNC

    def s(us, w, kind, b=NO_ID, flags=0):
        return (us, sync, flags, w, b, kind, 0, 0)

    both = [s(1200, 0, S.CREATE), s(1400, 1, S.CREATE)]
    rank0 = both + [s(1600, 0, S.POST, (1,)), s(2500, 0, S.WAIT, (1,)),  # (the open test: no row)
                    s(2700, 1, S.FENCE), s(2950, 1, S.FREE), s(3100, 0, S.FREE)]
    rank1 = both + [s(1650, 0, S.START, (0,)), (1710, E.MPI_RMA_PUT, 0, 0, 0, 0, 40, 0),
                    s(2400, 0, S.COMPLETE, (0,)), s(2700, 1, S.FENCE),
                    s(2780, 1, S.LOCK, 0, EXCL),  # the acquire's time; the failed try and the request add nothing
                    (2810, E.MPI_RMA_ATOMIC, 0, 1, 0, A.FETCH_AND_OP, 8, 8),
                    s(2835, 1, S.FLUSH, 0, LOCAL), s(2850, 1, S.UNLOCK, 0),  # (the put to no window: no row)
                    s(2950, 1, S.FREE), s(3100, 0, S.FREE)]
    return [rank0, rank1]


@pytest.mark.parametrize("big", [False, True], ids=["little-endian", "big-endian"])
def test_handwritten_rma_archive(tmp_path, big):
    anchor = otf2_bytes.write_rma_archive(tmp_path / "rma", big=big)
    a = otf2_native.read(anchor)
    assert a.problems == [] and a.notes == []  # RMA records translated, not skipped
    assert a.windows == {0: (0, "win A"), 1: (0, "win B")}
    assert a.comms[0][1] == "MPI_COMM_WORLD" and a.groups[a.comms[0][0]] == (0, 1)
    for rank, want in enumerate(_expected_rows()):
        ev = a.events[rank]
        got = []
        for r in ev[np.isin(ev["type"], RMA)]:
            b, c = int(r["b"]), int(r["c"])
            if r["type"] == E.MPI_RMA_SYNC and S.POST <= c <= S.TEST:
                b = a.groups[b]
            got.append((int(r["time"]) // 1000, int(r["type"]), int(r["flags"]), int(r["a"]), b, c, int(r["d"]),
                        int(r["e"])))
        assert got == want, rank
    trace = open_any(anchor)
    assert [str(p) for p in validate(trace)] == []


def test_fuzzed_rma_archives_give_only_trace_format_errors(tmp_path):
    """One byte of an event file, the global or a local definition file changed: the archive is read (with
    problems) or refused with our one error naming it; never an exception of another kind or a crash."""
    import random
    import shutil

    from tracefmt.errors import TraceFormatError

    base = otf2_bytes.write_rma_archive(tmp_path / "base").parent
    rng = random.Random(35)
    outcomes = {"read": 0, "error": 0}
    for k in range(120):
        work = tmp_path / f"m{k}"
        shutil.copytree(base, work)
        victim = work / ("traces/1.evt", "traces/0.evt", "traces.def", "traces/1.def")[k % 4]
        data = bytearray(victim.read_bytes())
        i = rng.randrange(len(data))
        data[i] = rng.choice([0, 1, 2, 3, 0x7F, 0xFE, 0xFF, data[i] ^ 1 << rng.randrange(8)])
        victim.write_bytes(bytes(data))
        try:
            trace = otf2_native.open_otf2(work)
            validate(trace)
            outcomes["read"] += 1
        except TraceFormatError as exc:
            assert str(exc).startswith(str(work)), exc
            outcomes["error"] += 1
        shutil.rmtree(work)
    assert outcomes["read"] and outcomes["error"]
