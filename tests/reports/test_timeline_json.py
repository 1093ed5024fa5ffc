"""``expert-analyze --timeline``: wait states, their causes and the critical path on a Chrome/Perfetto timeline.

Hand-built traces with one designed wait each: exactly one slice of that property with the designed
seconds, on the waiting thread, and one arrow from the designed cause to it; the file passes the
structural validator of the trace-event format (tests/reports/trace_event_format.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import analyzer
import tracefmt
from analyzer.cli.analyze import main as analyze_main
from analyzer.timeline import write_timeline
from analyzer.timeline.chrome_events import PATH_TID, WAIT_TRACK_OFFSET
from samples.demo import BAR, DESIGNED, IBAR, build_demo_trace
from tracefmt.chrome import write_chrome
from tracefmt.layout import LockKind

from trace_event_format import validate


def timeline(trace, tmp_path, name="t"):
    """Analyze a built trace, write its timeline, read it back validated."""
    path = tmp_path / f"{name}.elg"
    trace.write(path)
    cube = analyzer.analyze(str(path), jobs=1)
    out = tmp_path / f"{name}.json"
    summary = write_timeline(cube.context, out)
    doc = json.loads(out.read_text())
    return cube, validate(doc), summary


def waits_of(checked, prop):
    return [s for s in checked.named(prop) if s.event.get("cat") == "wait state"]


def arrow_into(checked, wait):
    """The one cause arrow that Perfetto draws into ``wait``; its ``perfetto_source`` is where it starts."""
    arrows = [f for f in checked.flows if f.perfetto_target is wait and f.start["cat"] == "wait cause"]
    assert len(arrows) == 1, f"{len(arrows)} cause arrows into {wait.event['name']}"
    return arrows[0]


def source(arrow):
    """(pid, tid, name) of the slice a cause arrow starts from in Perfetto."""
    s = arrow.perfetto_source
    return s.pid, s.tid, s.event["name"]


def the_wait(checked, prop, pid, tid, seconds):
    """The one wait slice of ``prop``; checks its track, seconds and extent."""
    found = waits_of(checked, prop)
    assert len(found) == 1, [(s.pid, s.tid, s.event["args"]["seconds"]) for s in found]
    w = found[0]
    assert (w.pid, w.tid) == (pid, tid)
    assert w.event["args"]["seconds"] == pytest.approx(seconds, abs=1e-9)
    assert (w.end - w.start) * 1e-9 == pytest.approx(seconds, abs=2e-9)
    return w


def mpi_pair():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc in (r0, r1):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 0.0, "MPI_Init"), b.exit(loc, 0.1, "MPI_Init")
    return b, r0, r1


def mpi_end(b, r0, r1, t=3.0):
    for loc in (r0, r1):
        b.enter(loc, t, "MPI_Finalize"), b.exit(loc, t + 0.1, "MPI_Finalize")
        b.exit(loc, t + 0.2, "main")
    return b


# ---------------------------------------------------------------- the validator itself
def _doc(*events):
    return {"traceEvents": list(events)}


def X(name, ts, dur, tid=0):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": tid}


def flow(ph, ts, tid=0, fid=1, **kw):
    return {"ph": ph, "name": "a", "cat": "c", "id": fid, "ts": ts, "pid": 0, "tid": tid, **kw}


@pytest.mark.parametrize("doc,message", [
    (_doc(X("a", 0, 10), X("b", 5, 10)), "overlaps"),
    (_doc({"ph": "X", "name": "a", "ts": 0, "pid": 0, "tid": 0}), "missing"),
    (_doc(X("a", 5, 1), X("b", 1, 1)), "goes back"),
    (_doc(X("a", 0, 10), flow("s", 2)), "phases"),
    (_doc(X("a", 0, 10), X("b", 0, 10, tid=1), flow("s", 8), flow("f", 5, tid=1, bp="e")), "ends before it starts"),
    (_doc(X("a", 0, 10), flow("s", 15), X("b", 20, 10), flow("f", 25, bp="e")), "in no slice"),
    (_doc(X("child", 0, 5), X("parent", 0, 10)), "overlaps"),
    (_doc(X("a", 0, 10), flow("s", 5), flow("f", 12, tid=1, bp="e")), "binds to no slice"),
    (_doc({"ph": "B", "name": "a", "ts": 0, "pid": 0, "tid": 0}), "B without E"),
    (_doc({"ph": "Q", "name": "a", "ts": 0, "pid": 0, "tid": 0}), "phase"),
])
def test_validator_catches_each_broken_rule(doc, message):
    with pytest.raises(AssertionError, match=message):
        validate(doc)


def test_validator_binds_flows_to_the_innermost_enclosing_slice():
    c = validate(_doc(X("outer", 0, 100), X("inner", 10, 20), X("other", 0, 100, tid=1),
                      flow("s", 15), flow("f", 50, tid=1, bp="e")))
    (f,) = c.flows
    assert (f.source.event["name"], f.target.event["name"]) == ("inner", "other")
    assert f.perfetto_source is f.source and f.perfetto_target is f.target
    # after "inner" ended and nothing began since, Perfetto still has it on top of the stack
    c = validate(_doc(X("outer", 0, 100), X("inner", 10, 20), X("other", 0, 100, tid=1),
                      flow("s", 40), flow("f", 50, tid=1, bp="e")))
    (f,) = c.flows
    assert (f.source.event["name"], f.perfetto_source.event["name"]) == ("outer", "inner")


# ---------------------------------------------------------------- one designed wait of each kind
def test_late_sender(tmp_path):
    b, r0, r1 = mpi_pair()
    b.enter(r0, 0.1, "work"), b.exit(r0, 1.0, "work")
    b.enter(r0, 1.0, "MPI_Send"), b.send(r0, 1.0, dest=1, tag=3, nbytes=8), b.exit(r0, 1.1, "MPI_Send")
    b.enter(r1, 0.2, "MPI_Recv"), b.recv(r1, 1.15, source=0, tag=3, nbytes=8), b.exit(r1, 1.2, "MPI_Recv")
    cube, c, _ = timeline(mpi_end(b, r0, r1), tmp_path)
    w = the_wait(c, "mpi_latesender", 1, 0, 0.8)
    assert w.start == 200_000_000 and w.event["args"]["call path"] == "main/MPI_Recv"
    a = arrow_into(c, w)
    # from the late send, at its ENTER
    assert source(a) == (0, 0, "MPI_Send")
    assert a.start["ts"] == a.end["ts"] == 1.0e6 and w.event["args"]["cause time (s)"] == 1.0
    assert w.event["args"]["cause location"] == "rank 0 thread 0"
    assert cube.total("mpi_latesender") == pytest.approx(0.8)
    # the only waits: none elsewhere
    assert [s.event["name"] for tr in c.slices.values() for s in tr if s.event.get("cat") == "wait state"] == \
        ["mpi_latesender"]


def test_late_receiver(tmp_path):
    b, r0, r1 = mpi_pair()
    b.enter(r0, 0.2, "MPI_Ssend"), b.send(r0, 0.2, dest=1, tag=1, nbytes=8), b.exit(r0, 1.3, "MPI_Ssend")
    b.enter(r1, 0.1, "work"), b.exit(r1, 1.0, "work")
    b.enter(r1, 1.0, "MPI_Recv"), b.recv(r1, 1.2, source=0, tag=1, nbytes=8), b.exit(r1, 1.3, "MPI_Recv")
    _, c, _ = timeline(mpi_end(b, r0, r1), tmp_path)
    w = the_wait(c, "mpi_latereceiver", 0, 0, 0.8)
    assert source(arrow_into(c, w)) == (1, 0, "MPI_Recv")


@pytest.mark.parametrize("region,prop,roots", [
    ("MPI_Barrier", "mpi_barrier_wait", {}),
    ("MPI_Allreduce", "mpi_wait_nxn", {}),
    ("MPI_Bcast", "mpi_latebroadcast", {"root": 0}),
])
def test_collective_waits_point_at_the_late_member(tmp_path, region, prop, roots):
    # rank 0 is late by 0.7 s: it enters at 1.0, rank 1 at 0.3
    b, r0, r1 = mpi_pair()
    b.enter(r0, 0.1, "work"), b.exit(r0, 1.0, "work")
    b.enter(r1, 0.1, "short work"), b.exit(r1, 0.3, "short work")
    kw = {"sent": 8, "recvd": 8}
    b.collective(r0, 1.0, 1.1, region, **roots, **kw)
    b.collective(r1, 0.3, 1.1, region, **roots, **kw)
    _, c, _ = timeline(mpi_end(b, r0, r1), tmp_path)
    w = the_wait(c, prop, 1, 0, 0.7)
    assert source(arrow_into(c, w)) == (0, 0, region)


def test_early_reduce_points_at_the_first_sender(tmp_path):
    b, r0, r1 = mpi_pair()
    b.enter(r1, 0.1, "work"), b.exit(r1, 0.9, "work")
    b.collective(r0, 0.2, 1.0, "MPI_Reduce", root=0, sent=8, recvd=16)
    b.collective(r1, 0.9, 1.0, "MPI_Reduce", root=0, sent=8, recvd=0)
    _, c, _ = timeline(mpi_end(b, r0, r1), tmp_path)
    w = the_wait(c, "mpi_earlyreduce", 0, 0, 0.7)
    assert source(arrow_into(c, w)) == (1, 0, "MPI_Reduce")


def test_barrier_completion_points_at_the_first_to_leave(tmp_path):
    # both enter together; rank 0 leaves at 0.5, rank 1 only at 0.9: rank 1's last 0.4 s are completion time
    b, r0, r1 = mpi_pair()
    b.collective(r0, 0.2, 0.5, "MPI_Barrier")
    b.collective(r1, 0.2, 0.9, "MPI_Barrier")
    b.enter(r0, 0.6, "work"), b.exit(r0, 1.0, "work")
    _, c, _ = timeline(mpi_end(b, r0, r1), tmp_path)
    w = the_wait(c, "mpi_barrier_completion", 1, 0, 0.4)
    assert w.start == 500_000_000 and w.end == 900_000_000  # the end of the call
    assert source(arrow_into(c, w)) == (0, 0, "MPI_Barrier")
    assert not waits_of(c, "mpi_barrier_wait")


def test_early_scan_points_at_the_late_lower_rank(tmp_path):
    b, r0, r1 = mpi_pair()
    b.enter(r0, 0.1, "work"), b.exit(r0, 1.0, "work")
    b.collective(r0, 1.0, 1.1, "MPI_Scan", sent=8, recvd=8)
    b.collective(r1, 0.2, 1.1, "MPI_Scan", sent=8, recvd=8)
    _, c, _ = timeline(mpi_end(b, r0, r1), tmp_path)
    w = the_wait(c, "mpi_earlyscan", 1, 0, 0.8)
    assert source(arrow_into(c, w)) == (0, 0, "MPI_Scan")


def omp_team(b, work_end, region_end=3.0):
    """Rank 0, two threads, one team; thread t works until work_end[t]."""
    m, w = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    b.enter(m, 0.0, "main")
    b.fork(m, 0.5, 1, 2)
    for t, th in enumerate((m, w)):
        b.enter(th, 0.5, "!$omp parallel @x.c:1", team=1, thread_num=t)
        b.enter(th, 0.5, "work"), b.exit(th, work_end[t], "work")
    return m, w


def test_omp_barrier_wait_points_at_the_last_thread(tmp_path):
    b = tracefmt.TraceBuilder()
    m, w = omp_team(b, (2.0, 1.4))
    for th in (m, w):
        b.barrier(th, 2.0 if th == m else 1.4, 2.05, region="!$omp barrier @x.c:3")
        b.exit(th, 2.1, "!$omp parallel @x.c:1")
    b.join(m, 2.1, 1, 2)
    b.exit(m, 2.5, "main")
    _, c, _ = timeline(b, tmp_path)
    wt = the_wait(c, "omp_ebarrier_wait", 0, 1, 0.6)
    assert source(arrow_into(c, wt)) == (0, 0, "!$omp barrier @x.c:3")  # the last thread's arrival


def test_lock_contention_points_at_the_holders_release(tmp_path):
    b = tracefmt.TraceBuilder()
    m, w = omp_team(b, (0.6, 0.6))
    lock = b.lock("L", LockKind.OMP_CRITICAL)
    crit, body = "!$omp critical @x.c:4", "!$omp critical sblock @x.c:4"
    b.enter(m, 0.6, crit), b.acquire(m, 0.6, lock), b.enter(m, 0.6, body), b.exit(m, 1.5, body)
    b.release(m, 1.5, lock), b.exit(m, 1.5, crit)
    b.enter(w, 0.7, crit), b.acquire(w, 1.5, lock), b.enter(w, 1.5, body), b.exit(w, 1.6, body)
    b.release(w, 1.6, lock), b.exit(w, 1.6, crit)
    for th in (m, w):
        b.exit(th, 1.7, "!$omp parallel @x.c:1")
    b.join(m, 1.7, 1, 2)
    b.exit(m, 2.0, "main")
    _, c, _ = timeline(b, tmp_path)
    wt = the_wait(c, "omp_lock_contention_critical", 0, 1, 0.8)
    assert source(arrow_into(c, wt)) == (0, 0, "release lock")  # the holder's release


def test_lock_api_contention_points_at_the_holders_release(tmp_path):
    b = tracefmt.TraceBuilder()
    m, w = omp_team(b, (0.6, 0.7))
    lock = b.lock("L", LockKind.OMP_LOCK)
    b.enter(m, 0.6, "omp_set_lock"), b.acquire(m, 0.6, lock), b.exit(m, 0.61, "omp_set_lock")
    b.enter(m, 0.61, "update"), b.exit(m, 1.4, "update")
    b.enter(m, 1.4, "omp_unset_lock"), b.release(m, 1.45, lock), b.exit(m, 1.5, "omp_unset_lock")
    b.enter(w, 0.7, "omp_set_lock"), b.acquire(w, 1.45, lock), b.exit(w, 1.46, "omp_set_lock")
    b.enter(w, 1.46, "omp_unset_lock"), b.release(w, 1.47, lock), b.exit(w, 1.48, "omp_unset_lock")
    for th in (m, w):
        b.exit(th, 1.7, "!$omp parallel @x.c:1")
    b.join(m, 1.7, 1, 2)
    b.exit(m, 2.0, "main")
    _, c, _ = timeline(b, tmp_path)
    wt = the_wait(c, "omp_lock_contention_api", 0, 1, 0.75)
    assert source(arrow_into(c, wt)) == (0, 0, "release lock")  # the holder's release, in omp_unset_lock


def test_idle_threads_are_the_masters_serial_time_per_call_path(demo_timeline):
    # the built demo: the workers idle while their masters run serially; per (call path, worker) the
    # idle slices add up to the cube's omp_idle_threads (no limited parallelism in it)
    cube, c, _ = demo_timeline
    ctx = cube.context
    idle = np.zeros((ctx.n_cnodes, ctx.n_locations))
    loc_of = {(int(ctx.location_process[l]), int(ctx.location_thread[l])): l for l in range(ctx.n_locations)}
    paths = {cube.callpath(k): k for k in range(ctx.n_cnodes)}
    for s in waits_of(c, "omp_idle_threads"):
        idle[paths[s.event["args"]["call path"]], loc_of[(s.pid, s.tid)]] += s.event["args"]["seconds"]
        assert source(arrow_into(c, s))[:2] == (s.pid, 0)  # each from the master
    assert np.allclose(idle, np.asarray(cube.values["omp_idle_threads"]), atol=1e-9)
    assert idle.sum() > 0


#: per designed wait of the built demo (property, rank, thread): the slice the cause arrow starts from
DEMO_CAUSES = {
    ("mpi_latesender", 1, 0): (0, 0, "MPI_Send"),
    ("omp_ebarrier_wait", 0, 1): (0, 0, BAR),
    ("omp_ebarrier_wait", 1, 1): (1, 0, BAR),
    ("omp_lock_contention_critical", 0, 1): (0, 0, "release lock"),
    ("omp_lock_contention_critical", 1, 1): (1, 0, "release lock"),
    ("omp_ibarrier_wait", 0, 0): (0, 1, IBAR),
    ("omp_ibarrier_wait", 1, 0): (1, 1, IBAR),
    ("mpi_barrier_wait", 1, 0): (0, 0, "MPI_Barrier"),
    ("mpi_latebroadcast", 0, 0): (1, 0, "MPI_Bcast"),
}


def test_demo_causes_cover_every_designed_wait():
    assert set(DEMO_CAUSES) == {(p, r, t) for p, _, r, t, _ in DESIGNED}


@pytest.fixture(scope="module")
def demo_timeline(tmp_path_factory):
    return timeline(build_demo_trace(), tmp_path_factory.mktemp("demo"))


@pytest.mark.parametrize("prop,path,rank,thread,seconds", DESIGNED)
def test_demo_each_designed_wait_has_a_slice_and_a_cause_arrow(demo_timeline, prop, path, rank, thread, seconds):
    _, c, _ = demo_timeline
    found = [s for s in waits_of(c, prop) if (s.pid, s.tid) == (rank, thread)
             and s.event["args"]["call path"] == path]
    assert len(found) == 1
    assert found[0].event["args"]["seconds"] == pytest.approx(seconds, abs=1e-9)
    assert source(arrow_into(c, found[0])) == DEMO_CAUSES[(prop, rank, thread)]


def test_critical_path_track(tmp_path):
    # the late sender trace: the path runs on rank 1 from its receive to the end, and on rank 0 before its send
    b, r0, r1 = mpi_pair()
    b.enter(r0, 0.1, "work"), b.exit(r0, 1.0, "work")
    b.enter(r0, 1.0, "MPI_Send"), b.send(r0, 1.0, dest=1, tag=3, nbytes=8), b.exit(r0, 1.1, "MPI_Send")
    b.enter(r1, 0.2, "MPI_Recv"), b.recv(r1, 1.15, source=0, tag=3, nbytes=8), b.exit(r1, 1.2, "MPI_Recv")
    b.enter(r1, 1.2, "more work"), b.exit(r1, 2.5, "more work")
    b.enter(r0, 1.1, "MPI_Finalize"), b.exit(r0, 2.6, "MPI_Finalize"), b.exit(r0, 2.7, "main")
    b.enter(r1, 2.5, "MPI_Finalize"), b.exit(r1, 2.6, "MPI_Finalize"), b.exit(r1, 2.7, "main")
    cube, c, summary = timeline(b, tmp_path)
    assert c.thread_names[(0, PATH_TID)] == c.thread_names[(1, PATH_TID)] == "critical path"
    pieces = sorted((s.start, s.end, s.event["args"]["location"]) for tr in c.slices.values() for s in tr
                    if s.event.get("cat") == "critical path")
    assert pieces[0][2] == "rank 0 thread 0" and pieces[-1][2] == "rank 1 thread 0"
    assert pieces[0][0] == 100_000_000 and pieces[0][1] == 1_000_000_000  # from MPI_Init's exit to the send
    assert pieces[-1][0] == 1_150_000_000  # from the receive
    assert summary["critical path pieces (s)"] > 0 and cube.total("critical_path") > 0


def test_a_wait_that_cannot_nest_goes_on_the_threads_wait_track(tmp_path):
    # a region ends inside the waiting interval (here a nested call in the receive): the wait slice
    # would overlap it, so it goes to the thread's own wait track
    b, r0, r1 = mpi_pair()
    b.enter(r0, 0.1, "work"), b.exit(r0, 1.0, "work")
    b.enter(r0, 1.0, "MPI_Send"), b.send(r0, 1.0, dest=1, tag=3, nbytes=8), b.exit(r0, 1.1, "MPI_Send")
    b.enter(r1, 0.2, "MPI_Recv"), b.enter(r1, 0.3, "progress"), b.exit(r1, 0.5, "progress")
    b.recv(r1, 1.15, source=0, tag=3, nbytes=8), b.exit(r1, 1.2, "MPI_Recv")
    _, c, summary = timeline(mpi_end(b, r0, r1), tmp_path)
    (w,) = waits_of(c, "mpi_latesender")
    assert (w.pid, w.tid) == (1, WAIT_TRACK_OFFSET) and summary["wait states on their own track"] == 1
    assert c.thread_names[(1, WAIT_TRACK_OFFSET)] == "rank 1 thread 0 waits"
    arrow_into(c, w)


# ---------------------------------------------------------------- the command line and the plain export
def test_expert_analyze_timeline_option(tmp_path, capsys):
    trace = tmp_path / "demo.elg"
    build_demo_trace().write(trace)
    out = tmp_path / "demo-timeline.json"
    assert analyze_main([str(trace), "-o", str(tmp_path / "demo.cubex"), "-j", "1", "--timeline", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    doc = json.loads(out.read_text())
    c = validate(doc)
    assert doc["otherData"]["wait states"] == len([s for tr in c.slices.values() for s in tr
                                                   if s.event.get("cat") == "wait state"])
    # with only some patterns the replay builds fewer tables: the timeline says what it left out
    assert analyze_main([str(trace), "-o", str(tmp_path / "ls.cubex"), "-j", "1", "-q", "--patterns",
                         "mpi_latesender", "--timeline", str(tmp_path / "ls.json")]) == 0
    doc = json.loads((tmp_path / "ls.json").read_text())
    validate(doc)
    assert any(x.startswith("critical path") for x in doc["otherData"]["left out"])
    assert doc["otherData"]["critical path pieces (s)"] == "n/a"


def test_plain_chrome_export_is_valid(tmp_path):
    trace = tmp_path / "demo.elg"
    build_demo_trace().write(trace)
    write_chrome(tracefmt.open(str(trace)), tmp_path / "plain.json")
    c = validate(json.loads((tmp_path / "plain.json").read_text()))
    assert len(c.flows) == 1 and c.flows[0].start["cat"] == "MPI message"
    assert not [s for tr in c.slices.values() for s in tr if s.event.get("cat") == "wait state"]



@pytest.mark.parametrize("seed,tasks", [(3, False), (11, False), (5, True)])
def test_random_hybrid_traces_every_arrow_ends_in_its_wait(tmp_path, seed, tasks):
    # random valid traces (messages, collectives, teams, locks; tasks run in barriers and POSIX threads with
    # tasks=True): the file passes the validator, each wait's seconds are the instance's, and every cause
    # arrow starts on its cause location and ends, as Perfetto binds it, in its own wait slice
    from random_hybrid_traces import random_builder

    cube, c, summary = timeline(random_builder(seed, tasks=tasks), tmp_path)
    waits = [s for tr in c.slices.values() for s in tr if s.event.get("cat") == "wait state"]
    assert len(waits) == summary["wait states"] > 0
    arrows = [f for f in c.flows if f.start["cat"] == "wait cause"]
    assert len(arrows) == summary["cause arrows"] > 0
    for f in arrows:
        target = f.perfetto_target
        assert target.event.get("cat") == "wait state" and target.event["name"] == f.start["name"]
        where = target.event["args"]["cause location"]
        assert f.perfetto_source is not None
        assert where == f"rank {f.perfetto_source.pid} thread {f.perfetto_source.tid}"
    # per property, the wait slices add up to the cube's total (late sender: with its wrong-order part, which the
    # slices name by the more specific property)
    named = {s.event["name"] for s in waits}
    for prop in named - {"omp_idle_threads", "omp_fork"}:
        kinds = {prop, "mpi_latesender_wo"} if prop == "mpi_latesender" else {prop}
        total = sum(s.event["args"]["seconds"] for s in waits if s.event["name"] in kinds)
        assert total == pytest.approx(float(np.asarray(cube.values[prop]).sum()), abs=1e-9), prop
