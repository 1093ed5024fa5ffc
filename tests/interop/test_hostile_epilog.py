"""Hostile EPILOG files and EPIK archives: bombs, damaged streams, sparse id maps, truncation, huge counts.

Issue 18 (items 3 and 4) and issue 13 (item 4): a gzip'ed EPILOG file of
261 kB ran past 120 s at 4.2 GB, a damaged gzip stream gave a zlib.error
traceback, a sparse id map asked for 32 GiB, a merged file cut at a record
boundary read as a shorter valid trace.
"""

import gzip
import os
import random
import shutil
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest

import tracefmt
from elgwrite import ElgWriter
from epilog_samples import epik_hybrid, merged_mpi
from tracefmt.cli import main as trace_main
from tracefmt.detect import open_any
from tracefmt.epilog_records import GZIP_FLOOR, EpilogFile, SparseIdMap
import tracefmt.epilog  # noqa: F401  (the reader and its kernels load before memory is measured)


def _one_line_exit_2(argv, capsys, *words):
    rc = trace_main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err


def test_a_gzip_bomb_is_refused_early(tmp_path, capsys):
    head = Path(merged_mpi(tmp_path / "m.elg")).read_bytes()
    bomb = gzip.compress(head + bytes(64 << 20), 9)  # 64 MiB of zeros behind a valid header: 65 kB
    assert len(bomb) < 100_000
    path = tmp_path / "bomb.elg"
    path.write_bytes(bomb)
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(tracefmt.TraceFormatError, match="decompression bomb"):
        open_any(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - t0 < 5 and peak < 3 * GZIP_FLOOR
    _one_line_exit_2(["check", str(path)], capsys, "bomb.elg", "decompresses to more than")


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.9])
def test_a_damaged_gzip_stream_is_one_line_for_every_command(tmp_path, capsys, cut):
    data = bytearray(Path(merged_mpi(tmp_path / "m.elg", compress=True)).read_bytes())
    for i in range(int(len(data) * cut), int(len(data) * cut) + 4):
        data[i] ^= 0x5A
    path = tmp_path / "bad.elg"
    path.write_bytes(bytes(data))
    for cmd in ("check", "info", "dump"):
        _one_line_exit_2([cmd, str(path)], capsys, "bad.elg")
    from analyzer.cli.analyze import main as analyze_main
    from analyzer.cli.tools import profile_main

    for main in (analyze_main, profile_main):
        assert main([str(path), *(["-o", str(tmp_path / "x.cubex")] if main is analyze_main else [])]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and "bad.elg" in err, err


def test_a_merged_file_cut_at_a_record_boundary_is_reported_as_truncated(tmp_path, capsys):
    path = merged_mpi(tmp_path / "m.elg")
    f = EpilogFile.open(str(path))
    events = [off for off, rtype, _ in f.records() if rtype >= 100]
    cut = tmp_path / "cut.elg"
    cut.write_bytes(Path(path).read_bytes()[: events[5]])
    t = open_any(cut)
    assert any("truncated: 5 of the 14 event records its NUM_EVENTS record announces" in p for p in t.problems)
    _one_line_exit_2(["check", str(cut)], capsys, "truncated: 5 of the 14")
    assert open_any(path).problems == []  # the whole file is not


def test_a_sparse_id_map_costs_its_entries_not_its_largest_id():
    m = SparseIdMap([3, 30, 4_000_000_000, 7])
    assert len(m) == 4_000_000_001
    assert (m[3], m[4_000_000_000], m[5]) == (30, 7, 5)
    with pytest.raises(IndexError):
        m[4_000_000_001]


def test_an_epik_map_with_a_huge_sparse_local_id_reads_in_bounded_memory(tmp_path):
    d = tmp_path / "epik_x"
    epik_hybrid(str(d), compress=False)
    w = ElgWriter(lids=False)
    w.map_section(0)
    w.idmap(8, {0: 0, 1: 1, 4_000_000_000: 1}, sparse=True)  # locations (record code 8), sparse
    w.save(d / "epik.map")
    tracemalloc.start()
    try:
        open_any(d)
    except tracefmt.TraceFormatError:
        pass  # the archive no longer matches; what matters is the memory
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 << 20


@pytest.mark.parametrize("count", [66, 1 << 20, 0xFFFFFFFF])
def test_an_id_map_announcing_more_entries_than_present_is_one_clean_error(tmp_path, capsys, count):
    d = tmp_path / "epik_x"
    epik_hybrid(str(d), compress=False)
    w = ElgWriter(lids=False)
    w.map_section(0)
    w.raw(25, struct.pack("<BBI", 9, 0, count) + struct.pack("<2I", 0, 1))  # IDMAP: 2 entries present
    w.save(d / "epik.map")
    tracemalloc.start()
    with pytest.raises(tracefmt.TraceFormatError, match=f"{count} entries announced"):
        open_any(d)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 << 20
    _one_line_exit_2(["check", str(d)], capsys, "entries announced")


def test_two_locations_with_one_thread_number_are_flagged_and_analysed(tmp_path):
    from analyzer.analyze import analyze
    from tracefmt.plausible import definition_warnings

    b = tracefmt.TraceBuilder()
    a, c = b.location(0, 0), b.location(0, 1)
    for loc in (a, c):
        b.enter(loc, 0.0, "main")
        b.exit(loc, 1.0)
    d = b.definitions()
    d.locations[c] = tracefmt.Location(c, 0, 0, "dup")
    from tracefmt.writer import to_bytes

    t = tracefmt.open(to_bytes(d, {loc: b.records(loc) for loc in d.locations}))
    assert any("are both thread 0 of process 0" in w for w in definition_warnings(t.defs))
    cube = analyze(t)  # the cube needs distinct threads: they are numbered per process
    assert sorted((loc.rank, loc.thread) for loc in cube.locations) == [(0, 0), (0, 1)]


def _mutants(rng, data: bytes, n: int):
    for _ in range(n):
        b = bytearray(data)
        k = rng.random()
        if k < 0.35:
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
        elif k < 0.55:
            b = b[: rng.randrange(len(b))]
        else:
            i = rng.randrange(max(1, len(b) - 4))
            b[i : i + 4] = struct.pack("<I", rng.choice([0xFFFFFFFF, 0x80000000, 10**8, 66, 0]))
        yield bytes(b)


@pytest.mark.parametrize("compress", [False, True])
def test_fuzzed_epilog_files_give_only_our_error(tmp_path, compress):
    """Small fuzz run (the fast subset): every mutant reads, or fails with TraceFormatError, in bounded time
    and memory; the analysis of what reads fails only with our error types too."""
    from analyzer.analyze import analyze
    from analyzer.cube import CubeError
    from patterns.api import PatternError

    rng = random.Random(18 + compress)
    src = Path(merged_mpi(tmp_path / "m.elg")).read_bytes()
    path = tmp_path / "f.elg"
    t_end = time.perf_counter() + 8
    for data in _mutants(rng, src, 60):
        if time.perf_counter() > t_end:
            break
        path.write_bytes(gzip.compress(data) if compress else data)
        tracemalloc.start()
        try:
            analyze(open_any(path))
        except (tracefmt.TraceFormatError, PatternError, CubeError):
            pass
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 64 << 20


@pytest.mark.slow
def test_fuzzed_epik_archives_give_only_our_error(tmp_path):
    """The larger fuzz run: 400 mutants of every file of a gzip'ed EPIK archive."""
    from analyzer.analyze import analyze
    from analyzer.cube import CubeError
    from patterns.api import PatternError

    d = tmp_path / "epik_z"
    epik_hybrid(str(d), compress=True)
    files = [os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs]
    rng = random.Random(13)
    for _ in range(400):
        target = rng.choice(files)
        orig = Path(target).read_bytes()
        plain = gzip.decompress(orig) if orig[:2] == b"\x1f\x8b" else orig
        data = next(_mutants(rng, plain, 1))
        Path(target).write_bytes(gzip.compress(data) if orig[:2] == b"\x1f\x8b" and rng.random() < 0.7 else data)
        try:
            analyze(open_any(d))
        except (tracefmt.TraceFormatError, PatternError, CubeError):
            pass
        finally:
            Path(target).write_bytes(orig)


def test_zlib_errors_never_escape_detection(tmp_path):
    path = tmp_path / "z.elg"
    path.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(64))
    with pytest.raises(tracefmt.TraceFormatError):
        open_any(path)
    shutil.rmtree(tmp_path / "none", ignore_errors=True)
    assert zlib  # the module the reader no longer lets through
