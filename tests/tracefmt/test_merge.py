"""tracefmt.merge: one trace from per-process traces (what a crashed run leaves; tests/runtime/test_crash.py
runs it on real ones).  Hand-built pieces whose ids differ on purpose, with the merged result known exactly."""
from __future__ import annotations

import pytest

import tracefmt
from tracefmt.builder import TraceBuilder
from tracefmt.cli import main as expert_trace
from tracefmt.errors import TraceFormatError
from tracefmt.layout import EventType as E
from tracefmt.layout import LockKind
from tracefmt.merge import merge, per_process_files
from tracefmt.validate import validate
from tracefmt.writer import encode_file_header


def rank0(path):
    b = TraceBuilder()
    loc = b.location(rank=0)
    world = b.comm((0, 1), "MPI_COMM_WORLD")
    b.enter(loc, 0.0, "main")
    b.enter(loc, 1.0, "MPI_Send")
    b.send(loc, 1.5, dest=1, tag=7, nbytes=8, comm=world)
    b.exit(loc, 2.0)
    b.collective(loc, 3.0, 4.0, "MPI_Barrier", comm=world)
    b.exit(loc, 5.0)
    b.write(str(path))


def rank1_killed(path):
    """Rank 1, two threads, regions defined in another order; killed inside MPI_Barrier: unfinished, open regions."""
    b = TraceBuilder()
    loc, worker = b.location(rank=1), b.location(rank=1, thread=1)
    b.region("MPI_Barrier")  # ids differ from rank 0's
    b.comm((1,), "MPI_COMM_SELF")
    world = b.comm((0, 1), "MPI_COMM_WORLD")
    lock = b.lock("critical", LockKind.OMP_CRITICAL)
    b.enter(loc, 0.0, "main")
    b.enter(loc, 1.0, "MPI_Recv")
    b.recv(loc, 1.8, source=0, tag=7, nbytes=8, comm=world)
    b.exit(loc, 2.0)
    b.enter(loc, 3.0, "MPI_Barrier")
    b.acquire(worker, 1.0, lock, order=1)
    b.release(worker, 1.5, lock, order=1)
    data = bytearray(b.to_bytes())
    data[: len(encode_file_header(1, 0, b.creator))] = encode_file_header(1, 0, b.creator)  # never finished
    path.write_bytes(bytes(data))


def names(trace, loc):
    ev = trace.events(loc)
    return [(E(int(t)), trace.defs.regions[int(a)].name if E(int(t)) in (E.ENTER, E.EXIT, E.MPI_COLLEXIT) else None)
            for t, a in zip(ev.type, ev.a)]


def test_merge_unifies_ids_and_closes_what_a_killed_process_left_open(tmp_path):
    rank0(tmp_path / "r.0.elg")
    rank1_killed(tmp_path / "r.1.elg")
    (tmp_path / "r.x.elg").write_bytes(b"not a piece")  # not a per-process name: ignored
    pieces = per_process_files(str(tmp_path / "r.elg"))
    assert pieces == [str(tmp_path / "r.0.elg"), str(tmp_path / "r.1.elg")]
    report = merge(pieces, str(tmp_path / "r.elg"))
    assert (report.processes, report.locations, report.closed_regions, report.complete) == (2, 3, 2, False)
    with tracefmt.open(str(tmp_path / "r.elg")) as t:
        assert not t.header.finished and t.defs.attributes["complete"].startswith("no (merged from 2 ")
        d = t.defs
        assert sorted((lc.id, lc.process, lc.thread) for lc in d.locations.values()) == [(0, 0, 0), (1, 1, 0),
                                                                                        (2, 1, 1)]
        assert sorted(r.name for r in d.regions.values()) == ["MPI_Barrier", "MPI_Recv", "MPI_Send", "main"]
        world = [c for c in d.comms.values() if c.name == "MPI_COMM_WORLD"]
        assert len(world) == 1 and world[0].ranks == (0, 1)
        assert [c.ranks for c in d.comms.values() if c.name == "MPI_COMM_SELF"] == [(1,)]
        assert [lk.name for lk in d.locks.values()] == ["critical"]
        # rank 1's events with rank 1's names, and the two regions open at its end closed at its last time
        assert names(t, 1) == [(E.ENTER, "main"), (E.ENTER, "MPI_Recv"), (E.MPI_RECV, None), (E.EXIT, "MPI_Recv"),
                               (E.ENTER, "MPI_Barrier"), (E.EXIT, "MPI_Barrier"), (E.EXIT, "main")]
        assert t.events(1).time[-1] == t.events(1).time[-3] == 3.0
        for loc in (0, 1):
            ev = t.events(loc)
            sel = (ev.type == E.MPI_SEND) | (ev.type == E.MPI_RECV)
            assert [int(c) for c in ev.b[sel]] == [world[0].id]
        ev = t.events(2)
        assert [(E(int(x)), int(a)) for x, a in zip(ev.type, ev.a)] == [(E.OMP_ACQUIRE_LOCK, 0),
                                                                       (E.OMP_RELEASE_LOCK, 0)]
        assert [str(p) for p in validate(t) if "never" in str(p)] == []


def test_process_ids_that_collide_are_renumbered(tmp_path):
    """Files of processes the traced program started (x.<pid>.elg) all say process 0."""
    for pid in (4711, 815):
        b = TraceBuilder()
        loc = b.location()
        b.enter(loc, 0.0, f"child {pid}")
        b.exit(loc, 1.0)
        b.write(str(tmp_path / f"x.{pid}.elg"))
    report = merge(per_process_files(str(tmp_path / "x.elg")), str(tmp_path / "x.elg"))
    assert report.complete and report.processes == 2
    with tracefmt.open(str(tmp_path / "x.elg")) as t:
        assert t.complete
        assert [(lc.process, names(t, lc.id)[0][1]) for lc in t.defs.locations.values()] == [(0, "child 815"),
                                                                                           (1, "child 4711")]


def test_command_line(tmp_path, capsys):
    rank0(tmp_path / "r.0.elg")
    rank1_killed(tmp_path / "r.1.elg")
    assert expert_trace(["merge", str(tmp_path / "r.elg")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{tmp_path / 'r.elg'}: 2 process(es), 3 location(s), 16 events from 2 file(s); incomplete " \
                     "(a process ended abnormally)"
    assert out[1] == "  2 region(s) still open where a piece ends were closed at its last event"
    assert expert_trace(["merge", str(tmp_path / "none.elg")]) == 2
    assert capsys.readouterr().err.startswith("expert-trace: error: ")
    (tmp_path / "bad.0.elg").write_bytes(b"\x89ELG\r\n\x1a\n" + bytes(100))
    assert expert_trace(["merge", str(tmp_path / "bad.elg")]) == 2
    assert not (tmp_path / "bad.elg").exists() and [p.name for p in tmp_path.glob("*.tmp")] == []


def test_unreadable_piece_is_an_error(tmp_path):
    (tmp_path / "e.0.elg").write_bytes(b"garbage")
    with pytest.raises(TraceFormatError):
        merge([str(tmp_path / "e.0.elg")], str(tmp_path / "e.elg"))


def test_a_missing_trace_names_the_per_process_traces(tmp_path, capsys):
    rank0(tmp_path / "r.0.elg")
    rank1_killed(tmp_path / "r.1.elg")
    assert expert_trace(["info", str(tmp_path / "r.elg")]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(f"no such file or directory; the run left 2 per-process trace(s) "
                                 f"({tmp_path / 'r.0.elg'} ... {tmp_path / 'r.1.elg'}): `expert-trace merge "
                                 f"{tmp_path / 'r.elg'}` makes one of them")


def test_a_later_clock_and_attribute_replace_earlier_ones(tmp_path):
    """The runtime's spool file writes its definitions as the run goes: each block a CLOCK with the tick rate
    measured so far and the `complete` attribute; the last ones count (docs/format.md §5)."""
    from tracefmt.definitions import Clock, Definitions, Location, Machine, Node, Process
    from tracefmt.writer import TraceWriter

    first = Definitions()
    first.machines[0] = Machine(0, "m")
    first.nodes[0] = Node(0, 0, "n")
    first.processes[0] = Process(0, 0, "rank 0")
    first.locations[0] = Location(0, 0, 0, "thread 0")
    first.clocks[0] = Clock(0, 1e9, 0)
    first.attributes["complete"] = "no (early)"
    later = Definitions(clocks={0: Clock(0, 2e9, 0)}, attributes={"complete": "no (late)"})
    with TraceWriter(str(tmp_path / "s.elg")) as w:
        w.write_definitions(first)
        w.write_definitions(later)
    with tracefmt.open(str(tmp_path / "s.elg")) as t:
        assert t.defs.clocks[0].ticks_per_second == 2e9 and t.defs.attributes["complete"] == "no (late)"
