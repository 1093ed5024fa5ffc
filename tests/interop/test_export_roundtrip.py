"""OTF2 output (read back by the otf2 package and otf2-print), ours -> OTF2 -> ours, Chrome JSON, detection."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import analyze
from epilog_samples import merged_mpi
from tracefmt import chrome, detect
from tracefmt.convert import convert
from tracefmt.errors import TraceFormatError
from tracefmt.layout import ANY, NO_ID, EventType as E


def hybrid_trace():
    """2 ranks x 2 threads: a parallel region with critical and implicit barrier, then
    a late-sender message (rank 1 waits 1.0 s), an Isend/Irecv pair, an Allreduce and a Bcast."""
    b = tracefmt.TraceBuilder()
    loc = {(r, t): b.location(rank=r, thread=t) for r in (0, 1) for t in (0, 1)}
    world = b.world()
    crit = b.lock("!$omp critical", tracefmt.layout.LockKind.OMP_CRITICAL)
    b.region("!$omp parallel @hyb.c:10", file="hyb.c", begin_line=10, end_line=20)
    for r in (0, 1):
        m, w = loc[(r, 0)], loc[(r, 1)]
        b.enter(m, 0.0, "main")
        b.enter(m, 0.1, "MPI_Init")
        b.exit(m, 0.2, "MPI_Init")
        b.fork(m, 1.0, team=0, size=2)
        for th, x in ((0, m), (1, w)):
            b.enter(x, 1.0 + 0.1 * th, "!$omp parallel @hyb.c:10")
            b.enter(x, 1.2 + 0.2 * th, "!$omp critical @hyb.c:12")
            b.acquire(x, 1.3 + 0.2 * th, crit)
            b.release(x, 1.4 + 0.2 * th, crit)
            b.exit(x, 1.45 + 0.2 * th, "!$omp critical @hyb.c:12")
            b.barrier(x, 1.5 + 0.25 * th, 2.0, implicit=True)
            b.exit(x, 2.1, "!$omp parallel @hyb.c:10")
        b.join(m, 2.2, team=0, size=2)
    m0, m1 = loc[(0, 0)], loc[(1, 0)]
    b.enter(m1, 3.0, "MPI_Recv")
    b.enter(m0, 4.0, "MPI_Send")
    b.send(m0, 4.0, dest=1, tag=5, nbytes=800, comm=world)
    b.exit(m0, 4.1, "MPI_Send")
    b.recv(m1, 4.3, source=0, tag=5, nbytes=800, comm=world)
    b.exit(m1, 4.3, "MPI_Recv")
    b.enter(m1, 4.5, "MPI_Irecv")
    b.recv_request(m1, 4.5, request=3, source=0, tag=6, comm=world)
    b.exit(m1, 4.6, "MPI_Irecv")
    b.enter(m0, 4.5, "MPI_Isend")
    b.send(m0, 4.5, dest=1, tag=6, nbytes=16, comm=world, request=9)
    b.exit(m0, 4.6, "MPI_Isend")
    b.enter(m0, 4.7, "MPI_Wait")
    b.send_complete(m0, 4.8, request=9)
    b.exit(m0, 4.8, "MPI_Wait")
    b.enter(m1, 4.7, "MPI_Wait")
    b.recv(m1, 4.9, source=0, tag=6, nbytes=16, comm=world, request=3)
    b.exit(m1, 4.9, "MPI_Wait")
    for r, t_in in ((0, 5.0), (1, 5.5)):
        m = loc[(r, 0)]
        b.collective(m, t_in, 6.0, "MPI_Allreduce", comm=world, sent=8, recvd=8)
        b.collective(m, 6.1, 6.5, "MPI_Bcast", comm=world, root=1, sent=16 if r == 1 else 0, recvd=8)
        b.enter(m, 7.0, "MPI_Finalize")
        b.exit(m, 7.5, "MPI_Finalize")
        b.exit(m, 8.0, "main")
    return b.build()


def _events(trace):
    """Every event field; times as integer nanoseconds from the trace's first event."""
    evs = {loc: trace.events(loc) for loc in trace.location_ids.tolist()}
    t0 = min(float(e.time[0]) for e in evs.values() if len(e))
    out = {}
    for loc, e in evs.items():
        out[loc] = dict(time=np.rint((e.time - t0) * 1e9).astype(np.int64).tolist(),
                        **{f: getattr(e, f).tolist() for f in ("type", "flags", "a", "b", "c", "d", "e")})
    return out


def test_otf2_output_conventions(tmp_path):
    import otf2

    src = tmp_path / "h.elg"
    hybrid_trace_path = src
    tr = hybrid_trace()
    from tracefmt.writer import write_trace

    write_trace(hybrid_trace_path, tr.defs, {loc: _raw(tr, loc) for loc in tr.location_ids.tolist()})
    out = tmp_path / "otf2"
    convert(str(src), str(out), "otf2")
    with otf2.reader.open(str(out / "traces.otf2")) as r:
        d = r.definitions
        regions = {x.name: x for x in d.regions}
        assert "MPI_Init" in regions and "MPI_Finalize" in regions
        assert regions["MPI_Send"].source_file == "MPI" and str(regions["MPI_Send"].paradigm).endswith("MPI")
        assert str(regions["MPI_Allreduce"].region_role).endswith("COLL_ALL2ALL")
        assert "!$omp parallel @hyb.c:10" in regions
        assert str(regions["!$omp implicit barrier"].region_role).endswith("IMPLICIT_BARRIER")
        assert sorted(g.name for g in d.location_groups) == ["MPI Rank 0", "MPI Rank 1"]
        assert sorted(loc.name for loc in d.locations) == ["Master thread", "Master thread",
                                                           "OMP thread 1", "OMP thread 1"]
        assert "MPI_COMM_WORLD" in {c.name for c in d.comms}
        n = 0
        orders = []
        kinds = {}
        for _loc, ev in r.events:
            n += 1
            kinds[type(ev).__name__] = kinds.get(type(ev).__name__, 0) + 1
            if type(ev).__name__ == "ThreadAcquireLock":
                orders.append(ev.acquisition_order)
        assert sorted(orders) == [1, 1, 2, 2]  # counted from 1 per process
        # every event of ours, plus ThreadTeamBegin/End around each of the 4 threads' parallel
        # region, and MpiCollectiveBegin + MpiCollectiveEnd (beside the Leave) for each of the
        # 4 collective calls
        n_ours = sum(tr.n_events(x) for x in tr.location_ids.tolist())
        assert n == n_ours + 2 * 4 + 2 * 4, kinds
    if shutil.which("otf2-print"):
        p = subprocess.run(["otf2-print", str(out / "traces.otf2")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "MPI_SEND" in p.stdout and "THREAD_FORK" in p.stdout and "MPI_COLLECTIVE_END" in p.stdout


def _raw(trace, loc):
    ev = trace.events(loc)
    rec = np.zeros(len(ev), tracefmt.layout.EVENT_DTYPE)
    rec["time"] = ev.ticks
    for f in ("type", "flags", "a", "b", "c", "d", "e"):
        rec[f] = getattr(ev, f)
    return rec


def test_round_trip_ours_otf2_ours_preserves_every_event(tmp_path):
    from tracefmt import otf2_in, otf2_out

    original = hybrid_trace()
    otf2_out.write_otf2(original, tmp_path / "o")
    back = otf2_in.read(tmp_path / "o").to_trace()
    a, b = _events(original), _events(back)
    assert sorted(a) == sorted(b)
    # OTF2's MpiIrecvRequest has no source, tag or communicator: the one documented loss
    for loc in a:
        for i, t in enumerate(a[loc]["type"]):
            if t == E.MPI_RECV_REQUEST:
                a[loc]["a"][i], a[loc]["b"][i], a[loc]["c"][i] = ANY, NO_ID, ANY
    for loc in a:
        for f in ("type", "flags", "a", "b", "c", "d", "e", "time"):
            assert a[loc][f] == b[loc][f], (loc, f)
    assert {c.name for c in back.defs.comms.values()} >= {"MPI_COMM_WORLD"}


def test_round_trip_preserves_analysis_results(tmp_path):
    from tracefmt import otf2_in, otf2_out

    original = hybrid_trace()
    otf2_out.write_otf2(original, tmp_path / "o")
    back = otf2_in.read(tmp_path / "o").to_trace()
    ca, cb = analyze(original), analyze(back)
    ta, tb = _totals(ca), _totals(cb)
    assert ta.keys() == tb.keys()
    for k in ta:
        assert ta[k] == pytest.approx(tb[k], abs=1e-9), k
    # the late sender built in: rank 1 waits in MPI_Recv from 3.0 until the send at 4.0
    assert ta["mpi_latesender"] == pytest.approx(1.0, abs=1e-9)


def _totals(cube) -> dict[str, float]:
    return {name: float(cube.total(name)) for name in cube.metric_names}


def test_chrome_json_required_fields(tmp_path):
    out = tmp_path / "t.json"
    chrome.write_chrome(hybrid_trace(), out)
    doc = json.loads(out.read_text())
    evs = doc["traceEvents"]
    for e in evs:
        assert {"ph", "pid", "tid", "name"} <= e.keys(), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], float) and e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0 and "cat" in e
    # one track per thread, grouped by process
    names = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # the 4.0 s -> 4.3 s message is a flow arrow from rank 0 to rank 1
    starts = [e for e in evs if e["ph"] == "s"]
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert len(starts) == 2 and len(ends) == 2
    s = min(starts, key=lambda e: e["ts"])
    f = ends[s["id"]]
    assert (s["pid"], s["ts"], f["pid"], f["ts"], f["bp"]) == (0, 4.0e6, 1, 4.3e6, "e")
    assert s["args"]["bytes"] == 800
    recv = [e for e in evs if e["ph"] == "X" and e["name"] == "MPI_Recv"][0]
    assert (recv["pid"], recv["ts"], recv["dur"]) == (1, 3.0e6, pytest.approx(1.3e6))


def test_detection_by_magic_not_name(tmp_path):
    # an EPILOG file named like one of ours, and one of ours named .dat
    ep = merged_mpi(tmp_path / "looks_native.elg")
    assert detect.detect(ep) == "epilog"
    gz = merged_mpi(tmp_path / "compressed.bin", compress=True)
    assert detect.detect(gz) == "epilog"
    native = tmp_path / "run.dat"
    native.write_bytes(hybrid_trace_bytes())
    assert detect.detect(native) == "native"
    t = detect.open_any(ep)
    assert t.location_ids.tolist() == [0, 1] and t.events(1).type.tolist()[2] == E.MPI_RECV
    junk = tmp_path / "junk.elg"
    junk.write_bytes(b"\0\1\2\3 nothing")
    with pytest.raises(TraceFormatError, match=r"junk\.elg: unknown trace format"):
        detect.open_any(junk)
    with pytest.raises(TraceFormatError, match="neither an EPIK archive"):
        detect.open_any(tmp_path)


def hybrid_trace_bytes() -> bytes:
    from tracefmt.writer import to_bytes

    tr = hybrid_trace()
    return to_bytes(tr.defs, {loc: _raw(tr, loc) for loc in tr.location_ids.tolist()})


def test_cli_convert_chrome_and_errors(tmp_path, capsys):
    from tracefmt.cli import main

    ep = merged_mpi(tmp_path / "m.elg")
    assert main(["convert", ep, str(tmp_path / "m.json"), "--to", "chrome"]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["traceEvents"]
    assert main(["convert", str(tmp_path / "missing"), str(tmp_path / "x.json"), "--to", "chrome"]) == 2
    assert "missing: no such file or directory" in capsys.readouterr().err
    assert main(["convert", ep, str(tmp_path / "m2.elg"), "--to", "elg"]) == 0
    with tracefmt.open(tmp_path / "m2.elg") as t:
        assert t.events(0).time.tolist() == [0.0, 1.0, 1.0, 1.5, 2.0, 3.0, 4.0]


def test_otf2_export_of_times_before_zero(tmp_path):
    # clock correction can move a rank's first events before 0 (its clock ran
    # behind rank 0's); OTF2 timestamps are unsigned, so the export shifts all
    # times by the same amount and the analysis is unchanged
    from tracefmt import otf2_in, otf2_out

    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.clock_offset(1, 0.0, -0.25)  # rank 1: global = local - 0.25
    for loc in (r0, r1):
        b.enter(loc, 0.0, "main")
    b.enter(r0, 1.0, "MPI_Send"); b.send(r0, 1.0, dest=1, nbytes=8); b.exit(r0, 1.1, "MPI_Send")
    b.enter(r1, 0.5, "MPI_Recv"); b.recv(r1, 1.3, source=0, nbytes=8); b.exit(r1, 1.4, "MPI_Recv")
    for loc in (r0, r1):
        b.exit(loc, 2.0, "main")
    original = b.build()
    assert original.events(r1).time[0] == pytest.approx(-0.25)

    otf2_out.write_otf2(original, tmp_path / "o")
    back = otf2_in.read(tmp_path / "o").to_trace()
    assert min(float(back.events(int(l)).time.min()) for l in back.location_ids) == pytest.approx(0.0, abs=1e-9)
    for loc in (r0, r1):  # every time moved by the same 0.25 s
        assert np.allclose(back.events(loc).time, original.events(loc).time + 0.25, atol=1e-9)
    # the late sender: rank 1 enters MPI_Recv at 0.25 (global), the send call starts at 1.0
    assert analyze(original).total("mpi_latesender") == pytest.approx(0.75, abs=1e-9)
    assert analyze(back).total("mpi_latesender") == pytest.approx(0.75, abs=1e-9)


def test_cli_convert_takes_the_format_from_the_output_name(tmp_path, capsys):
    from tracefmt.cli import main

    ep = merged_mpi(tmp_path / "m.elg")
    assert main(["convert", ep, str(tmp_path / "back.elg")]) == 0
    assert "(elg)" in capsys.readouterr().out  # the summary line names the format taken
    with tracefmt.open(tmp_path / "back.elg") as t:
        assert t.events(0).time.tolist() == [0.0, 1.0, 1.0, 1.5, 2.0, 3.0, 4.0]
    assert main(["convert", ep, str(tmp_path / "m.json")]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["traceEvents"]
    assert "(chrome)" in capsys.readouterr().out
    assert main(["convert", ep, str(tmp_path / "m.trace")]) == 2
    err = capsys.readouterr().err
    assert "cannot tell the target format from" in err and "--to" in err


def test_otf2_library_error_is_summarised_in_our_one_line(tmp_path, capfd):
    # time going backwards: the OTF2 library refuses the event and prints its own "[OTF2] ... error:" line;
    # the user sees only ours, with the library's words in it
    from tracefmt.cli import main as expert_trace

    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    work = b.region("work")
    b.enter(loc, 0.0, "main")
    b.event(loc, 2.0, E.ENTER, a=work)
    b.event(loc, 1.5, E.EXIT, a=work)
    b.exit(loc, 4.0, "main")
    b.write(tmp_path / "back.elg")
    assert expert_trace(["convert", str(tmp_path / "back.elg"), str(tmp_path / "out"), "--to", "otf2"]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[OTF2]" not in err[0], err
    assert "back.elg" in err[0] and "OTF2: " in err[0] and "timestamp is smaller" in err[0]
