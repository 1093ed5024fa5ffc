"""The MPI_FILE_IO kernel (``events_in_calls`` of analyzer/replay/kernels/enclosing.py with MPI_FILE_IO) against its slow reference on random nestings."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.replay.extract import FILE_IO_TYPES
from analyzer.replay.kernels.enclosing import events_in_calls
from kernel_references import file_io_rows_reference
from tracefmt.columns import event_columns
from tracefmt.layout import EventType, FileIoFlag


def random_location_trace(seed: int):
    """One location: random nesting of regions, file I/O events at random depths (also outside every call)."""
    rng = np.random.default_rng(seed)
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    t, open_regions = 0.0, []
    for _ in range(200):
        t += 1.0
        r = rng.random()
        if r < 0.35 or not open_regions and r < 0.7:
            name = f"MPI_File_{rng.choice(['read', 'write_all', 'seek'])}" if rng.random() < 0.5 else "work"
            b.enter(loc, t, name)
            open_regions.append(name)
        elif r < 0.7:
            b.exit(loc, t, open_regions.pop())
        else:
            flags = FileIoFlag.READ if rng.random() < 0.5 else FileIoFlag.WRITE | FileIoFlag.COLLECTIVE
            b.file_io(loc, t, int(rng.integers(0, 1 << 40)), flags)
    while open_regions:
        t += 1.0
        b.exit(loc, t, open_regions.pop())
    return b.build()


@pytest.mark.parametrize("seed", range(8))
def test_kernel_matches_reference(seed):
    trace = random_location_trace(seed)
    ev = trace.events(int(trace.location_ids[0]))
    cols = event_columns(ev)
    at, call = events_in_calls(cols.type, FILE_IO_TYPES, int((ev.type == EventType.ENTER).sum()))
    got = (call, cols.flags[at], cols.d[at], cols.time[at])
    want = file_io_rows_reference(ev)
    assert len(want[0]) > 0
    for g, w in zip(got, want):
        assert np.array_equal(g, np.asarray(w, g.dtype))
