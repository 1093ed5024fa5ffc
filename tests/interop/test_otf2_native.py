"""The native OTF2 reader (tracefmt.otf2_native) against the otf2-package reader (tracefmt.otf2_in).

Identical definitions and event columns (every field of every location) and
identical analysis results on the Score-P ping-pong fixture, on generator
traces of several shapes, and on hand-written archives with what the
generator never writes (big-endian chunks, several chunks per file, mapping
tables, clock offsets, attribute lists, long and unknown records).  Then what
only the native reader does: a missing or damaged location file named in one
line while the rest is read, and only TraceFormatError on damaged input.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import otf2_bytes
from repo_paths import OTF2_PING_PONG, shared
from tracefmt import otf2_native
from tracefmt.detect import open_any
from tracefmt.errors import TraceFormatError
from tracefmt.layout import EventType as E

BT_MZ = Path(OTF2_PING_PONG).parent / "npb-bt-mz-B-8x4"


def reference(path):
    from tracefmt import otf2_in

    return otf2_in.read(path)


def assert_same(native, ref):
    """Every definition, every event column of every location, the same problems."""
    for f in ("ticks_per_second", "process_names", "machine_name", "node_of_process", "groups", "comms", "locks",
              "attributes"):
        assert getattr(native, f) == getattr(ref, f), f
    for f in ("regions", "locations"):
        mine = {k: dataclasses.astuple(v) for k, v in getattr(native, f).items()}
        assert mine == {k: dataclasses.astuple(v) for k, v in getattr(ref, f).items()}, f
    # the otf2 package drops records of types it does not know without a word; we count them
    assert sorted(native.problems) == sorted(ref.problems)
    assert sorted(n for n in native.notes if " type-" not in n) == sorted(ref.notes)
    assert set(native.events) == set(ref.events)
    for loc, want in ref.events.items():
        got = native.events[loc]
        assert len(got) == len(want), f"location {loc}"
        for field in want.dtype.names:
            np.testing.assert_array_equal(got[field], want[field], err_msg=f"location {loc}, field {field}")


def assert_same_trace(mine, ref) -> None:
    """The native reader's Trace (its decoded columns, no copy into our format) against the reference's
    TraceAssembly written into our format and read back: definitions, problems, every column."""
    assert type(mine).__name__ == "Otf2Trace"
    assert mine.defs == ref.defs
    assert mine.location_ids.tolist() == ref.location_ids.tolist()
    assert sorted(mine.problems) == sorted(ref.problems)
    for loc in ref.location_ids.tolist():
        want, got = ref.events(loc), mine.events(loc)
        assert mine.n_events(loc) == ref.n_events(loc) == len(got) == len(want), f"location {loc}"
        assert mine.time_range(loc) == (ref.time_range(loc) if len(want) else None)
        buffer = mine.new_column_buffer(len(want))
        shared = mine.decode_into(loc, buffer)
        for field in ("time", "ticks", "type", "flags", "a", "b", "c", "d", "e"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=f"{loc} {field}")
            np.testing.assert_array_equal(shared[field], getattr(want, field), err_msg=f"{loc} {field}")
            assert getattr(got, field).dtype == getattr(want, field).dtype, field


def analysis_json(trace) -> str:
    import analyzer
    from analyzer.cube.json_summary import to_json_dict

    return json.dumps(to_json_dict(analyzer.analyze(trace)), sort_keys=True)


def generate(tmp_path, *args) -> Path:
    out = tmp_path / "synth"
    gen = shared("tools", "gen_otf2_synth.py")
    subprocess.run([sys.executable, str(gen), *args[:3], str(out), *args[3:]], check=True, capture_output=True)
    return out


# ---------------------------------------------------------------------------------- same as the reference
def test_ping_pong_identical_to_reference():
    path = shared("fixtures", "otf2", "pipit-ping-pong")
    native = otf2_native.read(path)
    assert native.problems == []
    assert_same(native, reference(path))
    assert_same_trace(open_any(path), reference(path).to_trace())


# generator key -> our metric's unique name (as tests/analyzer/test_cli_inputs.py)
SYNTH_METRICS = {"late_sender": "mpi_latesender", "late_receiver": "mpi_latereceiver", "wait_nxn": "mpi_wait_nxn",
                 "wait_barrier": "mpi_barrier_wait", "omp_ibarrier_wait": "omp_ibarrier_wait",
                 "omp_critical_contention": "omp_lock_contention_critical"}


@pytest.mark.parametrize("shape", [("1", "2", "30", "--no-mpi"), ("2", "1", "30", "--seed", "3"),
                                   ("2", "2", "30", "--seed", "7"), ("3", "4", "20", "--seed", "11"),
                                   ("1", "3", "15", "--seed", "5", "--jitter", "0.4")],
                         ids=["1x2-omp", "2x1-mpi", "2x2", "3x4", "1x3-hybrid"])
def test_generator_traces_identical_to_reference(tmp_path, shape):
    out = generate(tmp_path, *shape)
    assert_same(otf2_native.read(out), reference(out))
    assert_same_trace(open_any(out), reference(out).to_trace())
    from tracefmt import otf2_in

    mine = analysis_json(out / "traces.otf2")  # open_any: the native reader
    assert mine == analysis_json(otf2_in.read(out).to_trace())
    expected = json.loads((out / "synth_expected.json").read_text())["expected_seconds"]
    totals = {k: v["total"] for k, v in json.loads(mine)["metrics"].items()}
    for key, secs in expected.items():
        assert totals.get(SYNTH_METRICS[key], 0.0) == pytest.approx(secs, rel=1e-9, abs=1e-15), key


@pytest.mark.parametrize("iterations", [3, 1200], ids=["one-chunk", "several-chunks"])
def test_handwritten_archives_both_byte_orders(tmp_path, iterations):
    le = otf2_bytes.write_archive(tmp_path / "le", big=False, iterations=iterations)
    be = otf2_bytes.write_archive(tmp_path / "be", big=True, iterations=iterations)
    if iterations > 3:
        assert os.path.getsize(le.parent / "traces" / "0.evt") > 2 * otf2_bytes.CHUNK
    native_le, native_be = otf2_native.read(le), otf2_native.read(be)
    ref = reference(le)
    assert_same(native_le, ref)
    native_be.problems = [p.replace(str(be), str(le)) for p in native_be.problems]
    native_be.notes = [p.replace(str(be), str(le)) for p in native_be.notes]
    native_be.source = native_le.source
    assert_same(native_be, ref)
    ref_trace = ref.to_trace()
    assert_same_trace(open_any(le), ref_trace)
    be_trace = open_any(be)
    be_trace.problems = [p.replace(str(be), str(le)) for p in be_trace.problems]
    assert_same_trace(be_trace, ref_trace)
    # what the archive holds, read back: mapped ids, corrected times, requests, the unknown records counted
    ev = native_le.events[2]  # rank 1's master: mapping tables and clock offsets
    assert (ev["type"] == E.MPI_SEND_COMPLETE).sum() == iterations
    assert f"{le}: {2 * iterations} type-200 record(s) skipped (not analysed)" in native_le.notes
    assert native_le.locks == {5: (3, "!$omp critical")}


# ---------------------------------------------------------------------------------- the native reader only
def test_open_any_reads_natively(monkeypatch):
    from tracefmt import otf2_in

    def refuse(*a, **k):
        raise AssertionError("open_any used the otf2 package")

    monkeypatch.setattr(otf2_in, "read", refuse)
    trace = open_any(shared("fixtures", "otf2", "pipit-ping-pong"))
    assert sum(len(trace.events(int(i))) for i in trace.location_ids) == 116


def test_missing_location_file_named_rest_read(tmp_path):
    anchor = otf2_bytes.write_archive(tmp_path / "a", iterations=4)
    missing = anchor.parent / "traces" / f"{1 << 32}.evt"
    missing.unlink()
    a = otf2_native.read(anchor)
    lines = [p for p in a.problems if str(missing) in p]
    assert len(lines) == 1 and "event file missing" in lines[0] and "rank 0, thread 1" in lines[0]
    assert len(a.events[1]) == 0 and all(len(a.events[i]) for i in (0, 2, 3))
    trace = a.to_trace()
    assert len(trace.location_ids) == 4


def test_missing_location_marked_absent_in_the_results(tmp_path):
    """Issue 13 item 1: the cube, the JSON summary and the text report say which location is absent."""
    import io
    import tarfile

    import analyzer
    from analyzer.cli.text_report import report
    from analyzer.cube import cubex_bytes
    from analyzer.cube.json_summary import to_json_dict
    from analyzer.cube.dimensions import ABSENT_LOCATION_ATTR

    anchor = otf2_bytes.write_archive(tmp_path / "a", iterations=4)
    missing = anchor.parent / "traces" / f"{1 << 32}.evt"  # rank 0's worker thread
    missing.unlink()
    trace = open_any(anchor)
    assert list(trace.absent_locations) == [1] and "event file missing" in trace.absent_locations[1]
    cube = analyzer.analyze(trace, salvage=True)
    why = cube.attrs[ABSENT_LOCATION_ATTR + "rank 0 thread 1"]
    assert str(missing) in why and "event file missing" in why
    assert [k for k in cube.attrs if k.startswith(ABSENT_LOCATION_ATTR)] == [ABSENT_LOCATION_ATTR + "rank 0 thread 1"]
    assert to_json_dict(cube)["absent_locations"] == {"rank 0 thread 1": why}
    out = io.StringIO()
    report(cube, out=out)
    text = out.getvalue()
    assert "ABSENT: 1 location without events (values n/a):" in text and f"  - rank 0 thread 1: {why}" in text
    assert "rank 0 thread 1 n/a" in text  # beside the per-location shares of the worst properties
    with tarfile.open(fileobj=io.BytesIO(cubex_bytes(cube))) as tar:
        anchor_xml = tar.extractfile("anchor.xml").read().decode()
    assert anchor_xml.count("(absent)</name>") == 1 and "OMP thread 1 (absent)</name>" in anchor_xml
    assert f'key="{ABSENT_LOCATION_ATTR}rank 0 thread 1"' in anchor_xml
    # an archive with every file present marks nothing
    whole = analyzer.analyze(open_any(otf2_bytes.write_archive(tmp_path / "b", iterations=4)))
    assert not any(k.startswith(ABSENT_LOCATION_ATTR) for k in whole.attrs)
    assert "absent_locations" not in to_json_dict(whole)


@pytest.mark.parametrize("cut", [0.5, 0.97])
def test_damaged_location_keeps_what_precedes_the_damage(tmp_path, cut):
    anchor = otf2_bytes.write_archive(tmp_path / "a", iterations=6)
    intact = otf2_native.read(anchor)
    evt = anchor.parent / "traces" / "1.evt"
    data = evt.read_bytes()
    evt.write_bytes(data[:int(len(data) * cut)])
    a = otf2_native.read(anchor)
    lines = [p for p in a.problems if str(evt) in p]
    assert len(lines) == 1 and "(byte " in lines[0] and "rank 1, thread 0" in lines[0]
    n = len(a.events[2])
    assert 0 < n < len(intact.events[2])
    for field in a.events[2].dtype.names:
        if field != "c" and field != "time":  # team sizes and ticks may differ at the cut; the rest may not
            np.testing.assert_array_equal(a.events[2][field], intact.events[2][field][:n])
    for loc in (0, 1, 3):
        assert len(a.events[loc]) == len(intact.events[loc])


def test_unreadable_archives_raise_trace_format_errors(tmp_path):
    (tmp_path / "traces.otf2").write_bytes(b"garbage")
    (tmp_path / "traces.def").write_bytes(b"")
    with pytest.raises(TraceFormatError, match=r"traces\.otf2.*(chunk header|magic)"):
        otf2_native.read(tmp_path)
    anchor = otf2_bytes.write_archive(tmp_path / "sion")
    data = bytearray(anchor.read_bytes())
    data[data.index(b"\x01\x01", 2 + 5 + 5 + 16)] = 2  # file substrate SION
    anchor.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match="SIONlib"):
        otf2_native.read(anchor)
    anchor = otf2_bytes.write_archive(tmp_path / "nodefs")
    (anchor.parent / "traces.def").unlink()
    with pytest.raises(TraceFormatError, match=r"traces\.def: cannot read"):
        otf2_native.read(anchor)


def test_fuzzed_archives_give_only_trace_format_errors(tmp_path):
    """Bit flips, byte changes, truncations of every file kind: a result or a TraceFormatError, nothing else."""
    base = otf2_bytes.write_archive(tmp_path / "base", iterations=3).parent
    files = ["traces.otf2", "traces.def", "traces/0.def", "traces/1.evt", f"traces/{(1 << 32) | 1}.evt"]
    rng = random.Random(13)
    outcomes = {"read": 0, "error": 0}
    for k in range(240):
        work = tmp_path / f"m{k}"
        shutil.copytree(base, work)
        victim = work / files[k % len(files)]
        data = bytearray(victim.read_bytes())
        how = k // len(files) % 3
        if how == 0:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif how == 1:
            i = rng.randrange(len(data))
            data[i] = rng.choice([0, 1, 2, 3, 5, 6, 0x7F, 0xFE, 0xFF])
        else:
            del data[rng.randrange(len(data)):]
        victim.write_bytes(bytes(data))
        try:
            otf2_native.open_otf2(work)
            outcomes["read"] += 1
        except TraceFormatError as exc:
            assert str(exc).startswith(str(work)), exc  # names the file
            outcomes["error"] += 1
        shutil.rmtree(work)
    assert outcomes["read"] and outcomes["error"]


# ---------------------------------------------------------------------------------- a real application trace
@pytest.mark.slow
def test_bt_mz_missing_location_named_rest_read():
    a = otf2_native.read(BT_MZ)
    missing = [p for p in a.problems if "4.evt" in p]
    assert len(missing) == 1 and "event file missing" in missing[0] and "(rank 4, thread 0)" in missing[0]
    assert len(a.locations) == 32
    assert [i for i, ev in a.events.items() if len(ev) == 0] == [16]  # rank 4's master thread
    assert a.n_events() == 5_971_542


@pytest.mark.slow
def test_bt_mz_identical_to_reference_with_an_empty_rank_4_master(tmp_path):
    """The otf2 package cannot read the fixture (a file is missing); with an empty, valid event file in its
    place it can, and the two readers agree on 6 M big-endian events with mapping tables and clock offsets."""
    work = tmp_path / "bt"
    (work / "traces").mkdir(parents=True)
    for name in ("traces.otf2", "traces.def"):
        (work / name).symlink_to(BT_MZ / name)
    for f in (BT_MZ / "traces").iterdir():
        (work / "traces" / f.name).symlink_to(f)
    (work / "traces" / "4.evt").write_bytes(bytes([3, 0x23]) + (1).to_bytes(8, "big") + bytes(8) + b"\x02")
    assert_same(otf2_native.read(work), reference(work))


@pytest.mark.slow
def test_bt_mz_openmp_metrics_match_scalasca_location_by_location():
    """Issue 13 item 3: BT-MZ analysed with rank 4's master missing; every thread of the other ranks against
    Scalasca's trace analysis (scout.cubex) and Score-P's profile (summary.cubex) of the complete run.

    OpenMP metrics are local to a process, so ranks other than 4 do not miss anything.  Agreement: the
    OpenMP wait states and management times to 1e-6 (both sides sum the same clock-corrected nanosecond
    differences); visits exactly but for the program's root on each master thread (the profile counts it);
    time against the profile to 3e-4 (scout.cubex's `time` is exclusive of its wait-state children, so the
    profile's is the comparable one).  docs/interop.md gives the numbers, and what is not compared.
    """
    import analyzer
    from analyzer.cube import read_cubex

    ours = analyzer.analyze(BT_MZ, salvage=True)  # a location is missing: analyse what is there
    scout, profile = read_cubex(BT_MZ / "scout.cubex"), read_cubex(BT_MZ / "summary.cubex")

    def per_location(cube, metric):
        return {(loc.rank, loc.thread): v for loc, v in zip(cube.locations, cube.per_location(metric).tolist())}

    keys = [(r, t) for r in range(8) for t in range(4) if r != 4]
    for metric, ref, rtol, atol in (("omp_ibarrier_wait", scout, 1e-6, 1e-9), ("omp_management", scout, 1e-6, 1e-9),
                                    ("omp_fork", scout, 1e-6, 1e-9), ("time", profile, 3e-4, 0.0)):
        mine, theirs = per_location(ours, metric), per_location(ref, metric)
        for key in keys:
            assert mine[key] == pytest.approx(theirs[key], rel=rtol, abs=atol), (metric, key)
    mine, theirs = per_location(ours, "visits"), per_location(profile, "visits")
    # the profile counts one more visit on each master thread: the program's root, which Score-P's profile
    # has and the trace does not (our call tree's root is artificial)
    assert {k: theirs[k] - mine[k] for k in keys if mine[k] != theirs[k]} == {(r, 0): 1 for r in range(8) if r != 4}
