"""The replay decodes every location into one reused set of columns: same results as fresh events.

The reuse goes through the reader's ``Trace.decode_into`` (public for this
reuse); ``Trace.events`` must keep returning independent arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

import tracefmt.column_memory as memory
from analyzer.replay import replay

COLUMNS = ("time", "ticks", "type", "flags", "a", "b", "c", "d", "e")


@pytest.fixture(params=["numpy arrays", "populated mapping", "huge-page mapping"])
def column_memory(request, monkeypatch):
    """Each way the reader can allocate columns (small thresholds force the mappings on tiny traces)."""
    if request.param == "populated mapping":
        monkeypatch.setattr(memory, "POPULATED_COLUMNS_BYTES", 1)
        monkeypatch.setattr(memory, "HUGE_PAGE_COLUMNS_BYTES", 1 << 40)
    elif request.param == "huge-page mapping":
        monkeypatch.setattr(memory, "POPULATED_COLUMNS_BYTES", 1)
        monkeypatch.setattr(memory, "HUGE_PAGE_COLUMNS_BYTES", 1)
        monkeypatch.setenv("EXPERT_HUGE_PAGES", "on")  # also where they would not pay (tracefmt.pages)
    return request.param


def _sizes_differ(trace):
    return len({trace.n_events(int(l)) for l in trace.location_ids}) > 1


def test_decode_into_a_shared_buffer_matches_events(column_memory):
    trace = random_trace(3, n_ranks=3, n_threads=3, steps=30)
    assert _sizes_differ(trace)  # otherwise stale tails of a bigger location could not show
    locs = [int(l) for l in trace.location_ids]
    largest = max(trace.n_events(l) for l in locs)
    buffer = trace.new_column_buffer(largest)
    kept = {l: trace.events(l) for l in locs}
    # big, small, big again: each decode must see exactly its own events
    for l in sorted(locs, key=trace.n_events, reverse=True) + locs:
        cols = trace.decode_into(l, buffer)
        for name in COLUMNS:
            assert np.array_equal(cols[name], getattr(kept[l], name)), (l, name)
            assert np.shares_memory(cols[name], buffer[name])
    # the public events of earlier calls were not touched by any of that
    for l in locs:
        again = trace.events(l)
        for name in COLUMNS:
            assert np.array_equal(getattr(kept[l], name), getattr(again, name))
            assert not np.shares_memory(getattr(kept[l], name), getattr(again, name))


def test_decode_into_a_too_small_buffer_names_the_location():
    trace = random_trace(1)
    loc = max((int(l) for l in trace.location_ids), key=trace.n_events)
    buffer = trace.new_column_buffer(trace.n_events(loc) - 1)
    with pytest.raises(ValueError, match=f"location {loc} "):
        trace.decode_into(loc, buffer)


class _FreshEventsOnly:
    """A trace without ``decode_into`` (another reader): the replay must fall back to events()."""

    def __init__(self, trace):
        self._t = trace

    def __getattr__(self, name):
        if name in ("decode_into", "new_column_buffer"):
            raise AttributeError(name)
        return getattr(self._t, name)


@pytest.mark.parametrize("jobs", [1, 2])
def test_replay_with_reused_columns_equals_replay_with_fresh_events(column_memory, jobs):
    trace = random_trace(5, n_ranks=4, n_threads=3, steps=25)
    assert _sizes_differ(trace)
    reused = replay(trace, jobs=jobs)
    fresh = replay(_FreshEventsOnly(trace), jobs=jobs)
    assert np.array_equal(reused.calltree.parent, fresh.calltree.parent)
    assert np.array_equal(reused.calltree.region, fresh.calltree.region)
    for name in ("visits", "incl_time", "excl_time"):
        assert np.array_equal(getattr(reused, name), getattr(fresh, name)), name
    assert reused.tables.keys() == fresh.tables.keys()
    for t in reused.tables:
        a, b = reused.tables[t], fresh.tables[t]
        assert a.keys() == b.keys(), t
        for col in a:
            assert np.array_equal(a[col], b[col], equal_nan=a[col].dtype.kind == "f"), (t, col)
