"""Analysis and profile of traces whose ids are sparse or huge: bounded memory, same results (issue 18 item 3).

Before ``tracefmt.dense``, one unused region id of 10^8 in a 4 kB trace made
``expert-analyze`` run past 120 s at 1.7 GB, a location id of 10^8 asked for
23 GB, and a process id of 0xfffffffe overflowed int32 columns.
"""

import math
import time
import tracemalloc

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import analyze
from analyzer.profile.ompp import profile_trace
from hostile import hostile_bytes, small_builder

SANE = analyze(tracefmt.open(small_builder().to_bytes()))

CASES = [
    ("location", 2), ("location", 10**8), ("location", 2**31), ("location", 2**32 - 2),
    ("process", 7), ("process", 1_800_000_000), ("process", 2**31), ("process", 0xFFFFFFFD),
    ("thread", 2**31), ("thread", 2**32 - 2),
    ("region", 12_345_678), ("region", 10**8), ("region", 4_000_000_000), ("region", 2**32 - 3),
    ("unused_region", 10**8), ("unused_region", 2**32 - 3),
    ("metric", 10**8), ("metric", 2**32 - 3),
    ("tick_rate", 1e-300), ("tick_rate", 1e300), ("offset", math.nan), ("offset", -1000.0), ("drift", 5.0),
]


def _bounded(fn):
    """fn() with its Python-side allocations (numpy included) traced: (result, peak bytes, seconds)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return out, peak, time.perf_counter() - t0


@pytest.mark.parametrize("kind,value", CASES)
def test_analysis_of_a_hostile_id_is_bounded_and_keeps_the_results(kind, value):
    trace = tracefmt.open(hostile_bytes(kind, value))
    cube, peak, seconds = _bounded(lambda: analyze(trace))
    assert peak < 32 << 20, f"{kind}={value}: {peak / 2**20:.0f} MiB traced"
    assert seconds < 20
    names = set(cube.metric_names)
    assert names == set(SANE.metric_names)
    if kind in ("location", "region", "unused_region", "metric", "thread"):
        # renumbering changes no result: the same values per call path and location
        for m in ("time", "visits", "mpi_latesender", "mpi_wait_nxn"):
            assert cube.per_callpath(m) == pytest.approx(SANE.per_callpath(m)), m
            assert np.allclose(cube.per_location(m), SANE.per_location(m)), m
    for p in cube.context.problems:
        assert "\n" not in p


@pytest.mark.parametrize("kind,value", [("location", 10**8), ("process", 2**31), ("region", 10**8),
                                        ("unused_region", 4_000_000_000), ("metric", 2**32 - 3)])
def test_profile_of_a_hostile_id_is_bounded(kind, value):
    trace = tracefmt.open(hostile_bytes(kind, value))
    prof, peak, _ = _bounded(lambda: profile_trace(trace))
    assert peak < 32 << 20, f"{kind}={value}: {peak / 2**20:.0f} MiB traced"
    assert "work" in prof.regions or any(getattr(r, "name", "") == "work" for r in prof.regions.values())


def test_the_warnings_name_what_was_renumbered():
    cube = analyze(tracefmt.open(hostile_bytes("location", 10**8)))
    assert any("location ids are not dense" in p for p in cube.context.problems)
    cube = analyze(tracefmt.open(hostile_bytes("process", 2**31)))
    assert any("process ids (MPI ranks)" in p for p in cube.context.problems)
    cube = analyze(tracefmt.open(hostile_bytes("offset", -1000.0)))
    assert any("clock offset of process 1 is 1000 s" in p for p in cube.context.problems)
    cube = analyze(tracefmt.open(hostile_bytes("tick_rate", 1e-300)))
    assert sum("tick rate of 1e-300" in p for p in cube.context.problems) == 2  # one line per process
    assert np.isfinite(cube.total("time"))


def test_a_collective_of_different_operations_is_warned_about():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.enter(r0, 0.0, "main")
    b.enter(r1, 0.0, "main")
    b.collective(r0, 1.0, 2.0, "MPI_Bcast", root=0)
    b.collective(r1, 1.5, 2.0, "MPI_Reduce", root=0)
    b.exit(r0, 3.0)
    b.exit(r1, 3.0)
    cube = analyze(b.build())
    hits = [p for p in cube.context.problems if "different operations" in p]
    assert len(hits) == 1 and "MPI_Bcast and MPI_Reduce" in hits[0] and "MPI_COMM_WORLD" in hits[0]
    assert not any("different operations" in p for p in SANE.context.problems)


def _peak_rss_kib(argv) -> int:
    """Peak resident memory of one command (its own child process), in KiB."""
    import os
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import sys; from analyzer.cli.analyze import main; "
                             "sys.exit(main(sys.argv[1:]))", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    assert proc.returncode == 0, argv
    return usage.ru_maxrss


@pytest.mark.slow
def test_expert_analyze_of_a_hostile_file_stays_within_twice_a_sane_ones_memory(tmp_path):
    """Whole commands, as the issue measured them (a sane file of the same size is the yardstick)."""
    sane = tmp_path / "sane.elg"
    sane.write_bytes(small_builder().to_bytes())
    base = _peak_rss_kib([str(sane), "-o", str(tmp_path / "s.cubex"), "-q"])
    for kind, value in [("location", 10**8), ("process", 0xFFFFFFFD), ("region", 4_000_000_000),
                        ("unused_region", 10**8), ("metric", 2**32 - 3), ("tick_rate", 1e-300)]:
        path = tmp_path / f"{kind}.elg"
        path.write_bytes(hostile_bytes(kind, value))
        assert abs(path.stat().st_size - sane.stat().st_size) < 256
        rss = _peak_rss_kib([str(path), "-o", str(tmp_path / "h.cubex"), "-q"])
        assert rss < 2 * base, f"{kind}={value}: {rss} KiB, sane {base} KiB"
