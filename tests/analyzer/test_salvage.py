"""Damaged, truncated and out-of-order traces: expert-analyze refuses them in one line (exit 2) unless --salvage;
with it, the report and the cube say what was lost or repaired.  The replay checks that time never goes
backwards on a location; --salvage clamps such times, and no time comes out negative."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import SALVAGED_ATTR, analyze
from analyzer.cli.analyze import main
from analyzer.cube import read_cubex
from tracefmt.layout import EventType


def mpi_builder(n_iter=200):
    """Two ranks exchanging n_iter messages inside main (long enough to span several blocks)."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "main"); b.enter(r1, 0.0, "main")
    t = 1.0
    for _ in range(n_iter):
        b.enter(r1, t, "MPI_Send"); b.send(r1, t + 0.1, dest=0, tag=1, nbytes=8); b.exit(r1, t + 0.2, "MPI_Send")
        b.enter(r0, t - 0.5, "MPI_Recv"); b.recv(r0, t + 0.2, source=1, tag=1, nbytes=8); b.exit(r0, t + 0.3)
        t += 1.0
    b.exit(r0, t, "main"); b.exit(r1, t, "main")
    return b


def backwards_builder():
    """rank 0: main [0, 4] > work entered at 2.0 and left at 1.5 (the flush bug: time goes backwards)."""
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    work = b.region("work")
    b.enter(r0, 0.0, "main")
    b.event(r0, 2.0, EventType.ENTER, a=work)
    b.event(r0, 1.5, EventType.EXIT, a=work)
    b.enter(r0, 3.0, "MPI_Barrier"); b.exit(r0, 3.5, "MPI_Barrier")
    b.exit(r0, 4.0, "main")
    return b


@pytest.fixture
def truncated(tmp_path):
    whole = tmp_path / "whole.elg"
    mpi_builder().write(whole)
    data = whole.read_bytes()
    cut = tmp_path / "cut.elg"
    cut.write_bytes(data[: len(data) * 2 // 3])
    problems = tracefmt.open(cut).problems
    assert problems, "the cut file must be damaged"
    return cut, problems


def test_truncated_trace_is_refused_in_one_line(truncated, tmp_path, capsys):
    cut, problems = truncated
    out = tmp_path / "r.cubex"
    assert main([str(cut), "-o", str(out), "--no-plugins"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and cap.out == ""
    more = len(problems) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    assert err[0] == (f"expert-analyze: error: {cut}: damaged or incomplete trace: {problems[0]}{extra}; "
                      f"use --salvage to analyze what survived")
    assert not out.exists()


def test_salvage_says_what_was_lost_in_the_report_and_the_cube(truncated, tmp_path, capsys):
    cut, problems = truncated
    out = tmp_path / "r.cubex"
    assert main([str(cut), "-o", str(out), "--no-plugins", "--salvage"]) == 0
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert lines[0].startswith("SALVAGED: the trace is damaged, incomplete or out of time order; the results "
                               "below cover what survived (")
    for p in problems:
        assert f"  - {p}" in lines
    assert "expert-analyze: warning" not in cap.err  # the report lists them instead
    cube = read_cubex(str(out))
    assert cube.attrs[SALVAGED_ATTR].startswith("the trace is damaged, incomplete or out of time order")
    got = [cube.attrs[f"expert-analyze::problem{i}"] for i in range(len(problems))]
    assert got == problems


def test_time_going_backwards_is_refused_naming_location_event_and_times(tmp_path, capsys):
    trace = tmp_path / "back.elg"
    backwards_builder().write(trace)
    for jobs in ("1", "2"):
        assert main([str(trace), "-o", str(tmp_path / "b.cubex"), "--no-plugins", "-j", jobs]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"expert-analyze: error: {trace} (location 0): event 2 at 1.500000000 s is earlier than "
                       f"event 1 at 2.000000000 s: time goes backwards; --salvage raises such times to the time "
                       f"before"]
    with pytest.raises(tracefmt.TraceFormatError, match="event 2 at 1.500000000 s is earlier"):
        analyze(backwards_builder().build(), plugins=False)


def test_salvage_clamps_time_and_reports_it(tmp_path, capsys):
    cube = analyze(backwards_builder().build(), plugins=False, salvage=True)
    note = ("location 0: event 2 at 1.500000000 s is earlier than event 1 at 2.000000000 s: time goes backwards, "
            "by up to 0.500000000 s; each such time was raised to the latest before it (--salvage)")
    assert cube.context.problems == [note]
    assert cube.attrs["expert-analyze::problem0"] == note and SALVAGED_ATTR in cube.attrs
    for name in cube.metric_names:
        assert (np.asarray(cube.values[name]) >= 0).all(), name
    work = cube.find_cnodes("main/work")
    assert float(np.asarray(cube.values["time"])[work].sum()) == 0.0  # entered at 2.0, left at 2.0
    assert cube.total("time") == pytest.approx(4.0)
    assert cube.total("mpi") == pytest.approx(0.5)
    trace = tmp_path / "back.elg"
    backwards_builder().write(trace)
    assert main([str(trace), "-o", str(tmp_path / "b.cubex"), "--no-plugins", "--salvage", "-j", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SALVAGED:") and f"  - {note}\n" in out


def test_an_intact_trace_gets_no_salvage_attribute():
    cube = analyze(mpi_builder(5).build(), plugins=False, salvage=True)
    assert SALVAGED_ATTR not in cube.attrs and cube.context.problems == []


def test_expert_profile_gives_the_same_answer_on_a_truncated_trace(truncated, tmp_path, capsys):
    # refused in one line (exit 2) like expert-analyze and expert-trace check; with --salvage it profiles
    from analyzer.cli.tools import profile_main

    cut, problems = truncated
    assert profile_main([str(cut)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{cut}: damaged or incomplete trace: {problems[0]}" in err[0] and "--salvage" in err[0]
    assert profile_main([str(cut), "--salvage"]) == 0
    assert capsys.readouterr().out.startswith("ompP-style profile of")


def _backwards_reference(t):
    """(events earlier than the one before, index of the first, largest amount below the latest time ahead)."""
    n, first, worst, hi = 0, -1, 0.0, t[0] if len(t) else 0.0
    for i in range(1, len(t)):
        if t[i] < t[i - 1]:
            n += 1
            first = i if first < 0 else first
        worst = max(worst, hi - t[i])
        hi = max(hi, t[i])
    return n, first, worst


@pytest.mark.parametrize("seed", range(6))
def test_the_order_check_matches_its_reference_in_order_or_not(seed):
    from analyzer.replay.kernels.order import check_order

    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.random(200 + seed))
    cases = [t, t[:1], t[:0], np.full(5, 3.0)]
    for k in range(1, 4):  # one to three steps back, one at the very end
        u = t.copy()
        at = rng.choice(np.arange(1, len(u)), size=k, replace=False)
        u[at] -= rng.random(k) * 5
        cases.append(u)
    u = t.copy()
    u[-1] = u[-2] - 0.25
    cases.append(u)
    for c in cases:
        assert check_order(c) == _backwards_reference(c)
