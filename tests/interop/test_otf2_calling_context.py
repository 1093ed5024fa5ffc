"""Calling-context events (Score-P 2+ with unwinding or sampling) read as region visits by the native reader.

The hand-written archive (``otf2_bytes.write_calling_context_archive``) walks a
calling-context tree main/foo/bar, main/baz/bar with CallingContextEnter,
-Sample and -Leave records through a local mapping table, in both byte
orders; the ENTER/EXIT rows and the analysis's visits and times follow from
OTF2's unwind distances by hand (``otf2_bytes.CC_EVENTS``).
"""

from __future__ import annotations

import pytest

import otf2_bytes
from tracefmt import otf2_native
from tracefmt.detect import open_any
from tracefmt.layout import EventType as E

MAIN, FOO, BAR, BAZ = range(4)
#: (type, region, time in us) the records of otf2_bytes.CC_EVENTS stand for
EXPECTED = [(E.ENTER, MAIN, 100),
            (E.ENTER, FOO, 200), (E.ENTER, BAR, 200),
            (E.EXIT, BAR, 400), (E.EXIT, FOO, 400), (E.ENTER, BAZ, 400), (E.ENTER, BAR, 400),
            (E.EXIT, BAR, 500), (E.ENTER, BAR, 500),
            (E.EXIT, BAR, 600), (E.EXIT, BAZ, 600),
            (E.ENTER, FOO, 700), (E.EXIT, FOO, 800), (E.EXIT, MAIN, 900)]


@pytest.mark.parametrize("big", [False, True], ids=["little-endian", "big-endian"])
def test_calling_contexts_become_visits(tmp_path, big):
    anchor = otf2_bytes.write_calling_context_archive(tmp_path / "cc", big=big)
    a = otf2_native.read(anchor)
    assert a.problems == []
    assert not any("CallingContext" in n for n in a.notes)  # translated, not skipped
    assert [r.name for r in a.regions.values()] == otf2_bytes.CC_REGIONS
    ev = a.events[0]
    got = [(int(t), int(r), int(us)) for t, r, us in zip(ev["type"], ev["a"], ev["time"] // 1000)]
    assert got == [(int(t), r, us) for t, r, us in EXPECTED]


def test_calling_context_visits_and_times_analysed(tmp_path):
    import analyzer

    cube = analyzer.analyze(open_any(otf2_bytes.write_calling_context_archive(tmp_path / "cc")))
    assert cube.per_callpath("visits") == {"main": 1, "main/foo": 2, "main/foo/bar": 1, "main/baz": 1,
                                           "main/baz/bar": 2}
    # exclusive time per call path, seconds (1 us = 1e-6 s)
    assert cube.per_callpath("time") == pytest.approx({"main": 300e-6, "main/foo": 100e-6, "main/foo/bar": 200e-6,
                                  "main/baz": 0.0, "main/baz/bar": 200e-6}, abs=1e-12)


def test_undefined_calling_context_named(tmp_path):
    enc = otf2_bytes.Enc(False)
    events = otf2_bytes.calling_context_events(enc)
    events[3] = (events[3][0], enc.record(otf2_bytes.E_CC_SAMPLE, enc.u32(77) + enc.u32(2) + enc.u32(0)))
    anchor = otf2_bytes.write_calling_context_archive(tmp_path / "cc", events=events)
    a = otf2_native.read(anchor)
    evt = anchor.parent / "traces" / "0.evt"
    lines = [p for p in a.problems if str(evt) in p]
    assert len(lines) == 1 and "undefined calling context 77" in lines[0], a.problems
    assert len(a.events[0]) == 3  # main, foo, bar before the damage
    assert lines[0] in open_any(anchor).problems


def test_calling_context_cycle_cut_and_named(tmp_path, monkeypatch):
    """A parent chain that loops (damage) is cut at the node the walk comes back to, with one line."""
    ccs = dict(otf2_bytes.CALLING_CONTEXTS)
    ccs[10] = (0, 14)  # main's parent: main/baz/bar, which descends from main
    monkeypatch.setattr(otf2_bytes, "CALLING_CONTEXTS", ccs)
    anchor = otf2_bytes.write_calling_context_archive(tmp_path / "cc")
    a = otf2_native.read(anchor)
    assert a.problems == [f"{anchor.parent / 'traces'}.def: calling context 10 is its own ancestor; cut there"]
    assert len(a.events[0]) == len(EXPECTED)  # main became a root again: the same walk


def test_fuzzed_calling_context_archives_give_only_trace_format_errors(tmp_path):
    import random
    import shutil

    from tracefmt.errors import TraceFormatError

    base = otf2_bytes.write_calling_context_archive(tmp_path / "base").parent
    rng = random.Random(66)
    outcomes = {"read": 0, "error": 0}
    for k in range(90):
        work = tmp_path / f"m{k}"
        shutil.copytree(base, work)
        victim = work / ("traces/0.evt", "traces.def", "traces/0.def")[k % 3]
        data = bytearray(victim.read_bytes())
        i = rng.randrange(len(data))
        data[i] = rng.choice([0, 1, 2, 3, 0x7F, 0xFE, 0xFF, data[i] ^ 1 << rng.randrange(8)])
        victim.write_bytes(bytes(data))
        try:
            otf2_native.open_otf2(work)
            outcomes["read"] += 1
        except TraceFormatError as exc:
            assert str(exc).startswith(str(work)), exc
            outcomes["error"] += 1
        shutil.rmtree(work)
    assert outcomes["read"] and outcomes["error"]
