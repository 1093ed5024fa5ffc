"""The runtime's hardware counters (runtime/src/papi.c) on this machine.

EXPERT_METRICS with an event PAPI cannot count (on a VM without a CPU PMU: PAPI_L1_DCM) must
give one clear warning and a trace without counters; a software counter of the perf_event
component (perf::TASK-CLOCK, CPU nanoseconds) must flow into the trace: a METRIC definition
and a COUNTER right after every ENTER and EXIT on every thread, with its time.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tracefmt
from tracefmt.validate import validate
from samples.ats import scorecard
from tracefmt.layout import EventType

PROG = scorecard.ATS / "build" / "imbalance_in_parallel_region"
ARGS = ["-r", "1", "-d", "cyclic2", "-l", "0.01", "-H", "0.03"]

pytestmark = pytest.mark.runtime


@pytest.fixture(scope="module", autouse=True)
def built():
    """The runtime and the ATS programs, built as the scorecard builds them (make is a no-op when current)."""
    scorecard.build(lambda *a, **k: None)


def _papi_runtime():
    lib = scorecard.ROOT / "runtime" / "lib" / "libexpert.so"
    assert lib.exists() and PROG.exists(), "make did not build the runtime or the ATS programs"
    if "libpapi" not in subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout:
        pytest.skip("runtime built without PAPI (libpapi-dev missing)")


def _trace(tmp_path: Path, metrics: str):
    out = tmp_path / "t.elg"
    env = dict(os.environ, EXPERT_TRACE_FILE=str(out), EXPERT_METRICS=metrics, OMP_NUM_THREADS="2",
               OMP_WAIT_POLICY="passive")
    p = subprocess.run([str(scorecard.EXPERT_RUN), str(PROG), *ARGS], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return tracefmt.open(out), p.stderr


def test_uncountable_event_gives_one_warning_and_no_counters(tmp_path):
    _papi_runtime()
    if scorecard.counters_readable(("PAPI_L1_DCM",)) is None:
        pytest.skip("this machine can count PAPI_L1_DCM: nothing to refuse")
    trace, err = _trace(tmp_path, "PAPI_L1_DCM")
    lines = [line for line in err.splitlines() if "EXPERT_METRICS" in line]
    assert len(lines) == 1 and "PAPI_L1_DCM" in lines[0] and "recording no hardware counters" in lines[0], err
    assert trace.defs.metrics == {}
    for loc in trace.location_ids:
        assert not (trace.events(int(loc)).type == EventType.COUNTER).any()


def test_software_counter_follows_every_enter_and_exit(tmp_path):
    _papi_runtime()
    why = scorecard.counters_readable(("perf::TASK-CLOCK",))
    if why is not None:
        pytest.skip(f"perf::TASK-CLOCK cannot be read here: {why}")
    trace, err = _trace(tmp_path, "perf::TASK-CLOCK")
    assert "EXPERT_METRICS" not in err, err
    assert [m.name for m in trace.defs.metrics.values()] == ["perf::TASK-CLOCK"]
    assert len(trace.location_ids) == 2
    for loc in trace.location_ids:
        ev = trace.events(int(loc))
        is_counter = ev.type == EventType.COUNTER
        assert is_counter.sum() > 4
        before = np.flatnonzero(is_counter) - 1
        # every counter follows an ENTER or EXIT-like event (or the counter of the held exit) at its time
        assert (ev.time[before] == ev.time[is_counter]).all()
        assert np.isin(ev.type[before], [EventType.ENTER, EventType.EXIT, EventType.OMP_COLLEXIT]).all()
        values = ev.d[is_counter].astype(np.int64)
        assert (np.diff(values) >= 0).all()  # accumulated CPU nanoseconds of the thread
        enters_exits = np.isin(ev.type, [EventType.ENTER, EventType.EXIT]).sum()
        assert is_counter.sum() >= enters_exits * 0.8  # held exits and the closing exits may lack one
    assert validate(trace) == []
