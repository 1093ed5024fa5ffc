"""One location's decoded events as the typed bundle jitted code takes.

``tracefmt.Trace.events`` returns an :class:`~tracefmt.reader.Events`
object; kernels (the analyzer's replay and ``expert-profile``) take its
columns as an :class:`EventColumns`, a ``typing.NamedTuple`` of numpy
arrays that numba passes to nopython code like a plain tuple, read by
field name.  No numba is imported here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class EventColumns(NamedTuple):
    """The columns of one location's events, in the dtypes the kernels are compiled for."""

    type: np.ndarray  # uint8 event type (tracefmt.layout.EventType)
    flags: np.ndarray  # uint8
    a: np.ndarray  # uint32, meaning per event type (tracefmt.layout)
    b: np.ndarray  # uint32
    c: np.ndarray  # uint32
    d: np.ndarray  # uint64
    e: np.ndarray  # uint64
    time: np.ndarray  # float64 seconds, global clock


def event_columns(ev) -> EventColumns:
    """The columns of ``ev`` (an ``Events``) as contiguous arrays of those dtypes (no copy when they fit)."""
    c = np.ascontiguousarray
    return EventColumns(c(ev.type, np.uint8), c(ev.flags, np.uint8), c(ev.a, np.uint32), c(ev.b, np.uint32),
                        c(ev.c, np.uint32), c(ev.d, np.uint64), c(ev.e, np.uint64), c(ev.time, np.float64))
