"""The validator's memory: the largest location plus packed rows for the checks across locations.

Two ring traces with locations of the same length, one with 8 times as many locations (and messages) as the
other: the extra peak memory per extra message event must be that of a packed row (24 bytes, plus the sort
copy the message check makes), not of a Python tuple per message (about 130 bytes per message event when the
walk kept ``(loc, idx, time)`` tuples per (comm, src, dst, tag)).
"""

import tracemalloc

import tracefmt
from tracefmt.validate import validate

ITERATIONS = 2000  # send + receive per iteration and location


def _ring(path, ranks):
    tb = tracefmt.TraceBuilder()
    for r in range(ranks):
        loc = tb.location(rank=r)
        t = 0.0
        tb.enter(loc, t, "main")
        for _ in range(ITERATIONS):
            tb.enter(loc, t, "MPI_Send")
            tb.send(loc, t, dest=(r + 1) % ranks, tag=0, nbytes=8)
            t += 1e-6
            tb.exit(loc, t, "MPI_Send")
            tb.enter(loc, t, "MPI_Recv")
            tb.recv(loc, t, source=(r - 1) % ranks, tag=0, nbytes=8)
            t += 1e-6
            tb.exit(loc, t, "MPI_Recv")
        tb.exit(loc, t, "main")
    tb.write(path)
    return tracefmt.open(path)


def _peak(trace) -> int:
    assert validate(trace) == []  # once before: imports and caches are not the check's memory
    tracemalloc.start()
    try:
        assert validate(trace) == []
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_by_packed_rows_not_by_locations_events(tmp_path):
    few, many = _peak(_ring(tmp_path / "r4.elg", 4)), _peak(_ring(tmp_path / "r32.elg", 32))
    extra_message_events = (32 - 4) * ITERATIONS * 2
    assert (many - few) / extra_message_events < 64
    assert many < 4 * few  # 8 times the events
