"""The demo program's timeline: samples/waits/hybrid_waits.c traced by the C runtime on 2 ranks x 2 threads.

For each designed wait (samples.demo.PROGRAM_DESIGNED) the timeline has wait slices of that property
on the designed call path and location that add up to the cube's value there (how close that comes
to the designed seconds is tests/e2e/test_designed_waits.py's question: on a loaded machine the
sleeps drift), and Perfetto draws an arrow into each from the location that caused it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import analyzer
from analyzer.timeline import write_timeline
from analyzer.timeline.chrome_events import WAIT_TRACK_OFFSET
from samples.demo import PROGRAM_DESIGNED, matching_cnodes, toolchain_missing, trace_designed_program

from trace_event_format import validate

pytestmark = [pytest.mark.runtime, pytest.mark.slow]

SCALE = 0.5  # halves every designed wait to keep the run short; still far above timer noise

#: where the cause of each designed wait runs, relative to the waiting rank and thread: the rank's master
#: thread, the other rank's thread 0, or the waiting rank's other thread
CAUSE = {
    "omp_idle_threads": "master",
    "mpi_latesender": "other rank",
    "mpi_barrier_wait": "other rank",
    "mpi_latebroadcast": "other rank",
    "omp_ebarrier_wait": "other thread",
    "omp_lock_contention_critical": "other thread",
}


@pytest.fixture(scope="module")
def program_timeline(tmp_path_factory):
    why_not = toolchain_missing()
    if why_not:
        pytest.skip(f"cannot trace a real program: {why_not}")
    d = tmp_path_factory.mktemp("timeline")
    trace = trace_designed_program(d, scale=SCALE)
    cube = analyzer.analyze(str(trace), jobs=1)
    write_timeline(cube.context, d / "timeline.json")
    return cube, validate(json.loads((d / "timeline.json").read_text()))


def ends_with(path: str, suffix: str) -> bool:
    """The call path ends with the suffix's regions (an OpenMP region's name may add ' @file:line')."""
    have, want = path.split("/"), suffix.split("/")
    return len(have) >= len(want) and all(n == w or n.startswith(w + " @")
                                          for n, w in zip(have[len(have) - len(want):], want))


@pytest.mark.parametrize("prop,suffix,rank,thread,seconds", PROGRAM_DESIGNED)
def test_designed_wait_has_a_slice_and_an_arrow_from_its_cause(program_timeline, prop, suffix, rank, thread, seconds):
    cube, c = program_timeline
    found = [s for track in c.slices.values() for s in track
             if s.event.get("cat") == "wait state" and s.event["name"] == prop and s.pid == rank
             and (thread is None or s.tid % WAIT_TRACK_OFFSET == thread)
             and ends_with(s.event["args"]["call path"], suffix)]
    assert found, f"no {prop} slice on rank {rank} thread {thread} at .../{suffix}"
    locs = [i for i, loc in enumerate(cube.locations) if loc.rank == rank and (thread is None or loc.thread == thread)]
    in_cube = float(np.asarray(cube.values[prop])[np.ix_(matching_cnodes(cube, suffix), locs)].sum())
    assert sum(s.event["args"]["seconds"] for s in found) == pytest.approx(in_cube, abs=1e-9)
    assert in_cube > 0.25 * seconds * SCALE  # a designed wait, not noise
    for w in found:
        arrows = [f for f in c.flows if f.perfetto_target is w and f.start["cat"] == "wait cause"]
        assert len(arrows) == 1
        src = arrows[0].perfetto_source
        waiting_thread = w.tid % WAIT_TRACK_OFFSET
        expected = {"master": (rank, 0), "other rank": (1 - rank, 0), "other thread": (rank, 1 - waiting_thread)}
        assert (src.pid, src.tid) == expected[CAUSE[prop]]
